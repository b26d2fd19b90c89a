package mqtttest

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestKilledBy: Stop takes a mosquitto ended by its SIGTERM for a stop,
// and any other exit for a failure.
func TestKilledBy(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() error
		want bool
	}{
		{"ended by SIGTERM", func() error {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return cmd.Wait()
		}, true},
		{"ended by SIGKILL", func() error {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Process.Kill()
			return cmd.Wait()
		}, false},
		{"exit status 1", func() error { return exec.Command("false").Run() }, false},
		{"not started", func() error { return exec.Command("/nonexistent/mosquitto").Run() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := killedBy(tc.run(), syscall.SIGTERM); got != tc.want {
				t.Errorf("killedBy = %v, want %v", got, tc.want)
			}
		})
	}
}
