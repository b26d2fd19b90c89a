package runtime

import (
	"errors"
	"strconv"
	"testing"
)

// A validator records at most rtMaxViolations violations and counts the
// others, whether they are found directly or in a nested document.
func TestViolationsAreBoundedAndCounted(t *testing.T) {
	cases := []struct {
		name          string
		direct, under int // violations added directly, and through rtDecodeAt's merge
		listed        int
		omitted       int
	}{
		{"none", 0, 0, 0, 0},
		{"below the bound", 7, 0, 7, 0},
		{"at the bound", rtMaxViolations, 0, rtMaxViolations, 0},
		{"past the bound", rtMaxViolations + 250, 0, rtMaxViolations, 250},
		{"nested past the bound", 60, 90, rtMaxViolations, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v rtValidator
			root := rtPath{key: "params", index: -1}
			for i := range tc.direct {
				p := rtPath{parent: &root, index: i}
				v.add(&p, "type", "x")
			}
			var sub rtValidator
			for i := range tc.under {
				p := rtPath{parent: &root, key: "n" + strconv.Itoa(i), index: -1}
				sub.add(&p, "type", "x")
			}
			v.merge(&sub)
			err := v.err()
			if tc.listed == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Violations) != tc.listed || verr.Omitted != tc.omitted || verr.Total() != tc.direct+tc.under {
				t.Fatalf("%d listed, %d omitted (%v)", len(verr.Violations), verr.Omitted, err)
			}
			v.reset()
			if v.err() != nil {
				t.Fatal("reset kept violations")
			}
		})
	}
}
