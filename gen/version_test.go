package gen

import (
	"testing"

	"github.com/a2abind/a2abind/gen/runtime"
)

// The generated code is written for runtimeVersion; the runtime it imports
// must support it (the generated constants would not compile otherwise).
func TestRuntimeSupportsTheGeneratedVersion(t *testing.T) {
	if runtimeVersion < runtime.MinVersion || runtimeVersion > runtime.MaxVersion {
		t.Fatalf("a2agen emits version %d; gen/runtime supports %d to %d", runtimeVersion, runtime.MinVersion, runtime.MaxVersion)
	}
	if runtimeVersion != runtime.GenVersion {
		t.Fatalf("a2agen emits version %d, gen/runtime's current version is %d: update one of them", runtimeVersion, runtime.GenVersion)
	}
}
