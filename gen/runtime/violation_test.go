package runtime

import (
	"errors"
	"strconv"
	"testing"
)

// A validator records at most MaxViolations violations and counts the
// others, whether they are found directly or in a nested document.
func TestViolationsAreBoundedAndCounted(t *testing.T) {
	cases := []struct {
		name          string
		direct, under int // violations added directly, and through DecodeAt's merge
		listed        int
		omitted       int
	}{
		{"none", 0, 0, 0, 0},
		{"below the bound", 7, 0, 7, 0},
		{"at the bound", MaxViolations, 0, MaxViolations, 0},
		{"past the bound", MaxViolations + 250, 0, MaxViolations, 250},
		{"nested past the bound", 60, 90, MaxViolations, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v Validator
			root := Path{key: "params", index: -1}
			for i := range tc.direct {
				p := Path{parent: &root, index: i}
				v.Add(&p, "type", "x")
			}
			var sub Validator
			for i := range tc.under {
				p := Path{parent: &root, key: "n" + strconv.Itoa(i), index: -1}
				sub.Add(&p, "type", "x")
			}
			v.merge(&sub)
			err := v.Err()
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
			if v.Err() != nil {
				t.Fatal("reset kept violations")
			}
		})
	}
}
