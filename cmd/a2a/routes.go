package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"

	"github.com/a2abind/a2abind/statemachines/handover"
)

// fileRoutes is a handover.Store in a JSON file, so that a follow-up sent by
// a later run of a2a send goes to the agent that took the task over.
type fileRoutes struct{ path string }

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
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

// SaveRoute implements handover.Store.
func (f fileRoutes) SaveRoute(r handover.Route) error {
	m, err := f.load()
	if err != nil {
		return err
	}
	m[r.TaskID] = r
	return f.store(m)
}

// DeleteRoute implements handover.Store.
func (f fileRoutes) DeleteRoute(taskID string) error {
	m, err := f.load()
	if err != nil {
		return err
	}
	delete(m, taskID)
	return f.store(m)
}

// LoadRoutes implements handover.Store.
func (f fileRoutes) LoadRoutes() ([]handover.Route, error) {
	m, err := f.load()
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
