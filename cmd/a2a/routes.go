package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/a2abind/a2abind/statemachines/handover"
)

// fileRoutes is a handover.Store in a JSON file, so that a follow-up sent by
// a later run of a2a send goes to the agent that took the task over.
// Concurrent runs take turns through an advisory lock on a sibling file
// (path + ".lock"), and each writes its own temporary file before renaming
// it over the routes, so no update is lost and no reader sees half a file.
type fileRoutes struct{ path string }

// locked runs fn holding the routes lock, exclusive or shared.
func (f fileRoutes) locked(exclusive bool, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	l, err := os.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := lockFile(l, exclusive); err != nil {
		return fmt.Errorf("%s: lock: %w", f.path, err)
	}
	return fn()
}

// defaultRoutesPath is $XDG_STATE_HOME/a2a/routes.json, or
// ~/.local/state/a2a/routes.json.
func defaultRoutesPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "a2a", "routes.json"), nil
}

func (f fileRoutes) load() (map[string]handover.Route, error) {
	m := map[string]handover.Route{}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errors.New(f.path + ": " + err.Error())
	}
	return m, nil
}

func (f fileRoutes) store(m map[string]handover.Route) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return werr
	}
	return os.Rename(tmp.Name(), f.path)
}

// update applies fn to the routes under the exclusive lock.
func (f fileRoutes) update(fn func(map[string]handover.Route)) error {
	return f.locked(true, func() error {
		m, err := f.load()
		if err != nil {
			return err
		}
		fn(m)
		return f.store(m)
	})
}

// SaveRoute implements handover.Store.
func (f fileRoutes) SaveRoute(r handover.Route) error {
	return f.update(func(m map[string]handover.Route) { m[r.TaskID] = r })
}

// DeleteRoute implements handover.Store.
func (f fileRoutes) DeleteRoute(taskID string) error {
	return f.update(func(m map[string]handover.Route) { delete(m, taskID) })
}

// LoadRoutes implements handover.Store.
func (f fileRoutes) LoadRoutes() ([]handover.Route, error) {
	var m map[string]handover.Route
	err := f.locked(false, func() error {
		var err error
		m, err = f.load()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]handover.Route, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out, nil
}
