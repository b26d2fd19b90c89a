package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// fileRoutes is a handover.Store in a JSON file, so that a follow-up sent by
// a later run of a2a send goes to the agent that took the task over.
// Concurrent runs take turns through an advisory lock on a sibling file
// (path + ".lock"), and each writes its own temporary file before renaming
// it over the routes, so no update is lost and no reader sees half a file.
//
// The file is bounded across runs: a route not saved for savedRouteExpiry
// is dropped, and past maxSavedRoutes the least recently saved routes are,
// whenever the file is written (and left out when it is read), so that a
// run costs the same however many ran before it.
type fileRoutes struct{ path string }

// The bounds of the routes file.
const (
	// maxSavedRoutes is how many routes the file keeps.
	maxSavedRoutes = 10_000
	// savedRouteExpiry is how long the file keeps a route not saved
	// again: the requester's own idle expiry of routes.
	savedRouteExpiry = requester.DefaultRouteIdleExpiry
)

// savedRoute is a route as the file keeps it: with the time it was last
// saved (absent from files written before the bounds, read as the file's
// modification time).
type savedRoute struct {
	handover.Route
	Saved time.Time `json:"saved,omitzero"`
}

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

// load reads the routes, within the bounds at now.
func (f fileRoutes) load(now time.Time) (map[string]savedRoute, error) {
	m := map[string]savedRoute{}
	file, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if err := json.NewDecoder(bufio.NewReaderSize(file, 64<<10)).Decode(&m); err != nil {
		return nil, errors.New(f.path + ": " + err.Error())
	}
	for id, r := range m {
		if r.Saved.IsZero() {
			r.Saved = info.ModTime()
			m[id] = r
		}
	}
	trimRoutes(m, now)
	return m, nil
}

// trimRoutes drops the routes not saved for savedRouteExpiry at now, then
// the least recently saved beyond maxSavedRoutes.
func trimRoutes(m map[string]savedRoute, now time.Time) {
	cut := now.Add(-savedRouteExpiry)
	for id, r := range m {
		if r.Saved.Before(cut) {
			delete(m, id)
		}
	}
	if len(m) <= maxSavedRoutes {
		return
	}
	all := make([]savedRoute, 0, len(m))
	for _, r := range m {
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b savedRoute) int {
		if c := a.Saved.Compare(b.Saved); c != 0 {
			return c
		}
		return cmp.Compare(a.TaskID, b.TaskID)
	})
	for _, r := range all[:len(all)-maxSavedRoutes] {
		delete(m, r.TaskID)
	}
}

func (f fileRoutes) store(m map[string]savedRoute) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(m)
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

// update applies fn to the routes under the exclusive lock; the file
// written is within the bounds.
func (f fileRoutes) update(fn func(map[string]savedRoute, time.Time)) error {
	return f.locked(true, func() error {
		now := time.Now()
		m, err := f.load(now)
		if err != nil {
			return err
		}
		fn(m, now)
		trimRoutes(m, now)
		return f.store(m)
	})
}

// SaveRoute implements handover.Store.
func (f fileRoutes) SaveRoute(r handover.Route) error {
	return f.update(func(m map[string]savedRoute, now time.Time) { m[r.TaskID] = savedRoute{Route: r, Saved: now} })
}

// DeleteRoute implements handover.Store.
func (f fileRoutes) DeleteRoute(taskID string) error {
	return f.update(func(m map[string]savedRoute, _ time.Time) { delete(m, taskID) })
}

// LoadRoutes implements handover.Store: the routes within the bounds.
func (f fileRoutes) LoadRoutes() ([]handover.Route, error) {
	var m map[string]savedRoute
	err := f.locked(false, func() error {
		var err error
		m, err = f.load(time.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]handover.Route, 0, len(m))
	for _, r := range m {
		out = append(out, r.Route)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out, nil
}
