//go:build !linux

package main

import (
	"errors"
	"io"
	"os"
)

// passwdTerminal reports whether f is a character device (a terminal, most
// likely).
func passwdTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// readNoEcho is not available here: this build cannot turn the echo off.
func readNoEcho(*os.File, io.Writer, string) (string, error) {
	return "", errors.New("cannot turn the terminal's echo off on this system: pipe the password on stdin, or use -b")
}
