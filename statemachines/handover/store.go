package handover

import (
	"cmp"
	"slices"
)

// Store keeps routes across restarts. A requester backs it with its own
// storage; MemStore is an in-memory one.
type Store interface {
	// SaveRoute inserts or replaces the route of r.TaskID.
	SaveRoute(r Route) error
	// DeleteRoute removes a route; deleting a missing one is not an error.
	DeleteRoute(taskID string) error
	// LoadRoutes returns every saved route.
	LoadRoutes() ([]Route, error)
}

// Save writes every route of the table to s, in Task.id order.
func (t *Table) Save(s Store) error {
	for _, r := range t.Routes() {
		if err := s.SaveRoute(r); err != nil {
			return err
		}
	}
	return nil
}

// Restore replaces the table's routes with those s holds. Every route is
// checked first (Route.Check); on any error the table is left unchanged.
func (t *Table) Restore(s Store) error {
	routes, err := s.LoadRoutes()
	if err != nil {
		return err
	}
	m := make(map[string]*Route, len(routes))
	for _, r := range routes {
		if err := r.Check(); err != nil {
			return err
		}
		m[r.TaskID] = &r
	}
	t.routes = m
	return nil
}

// MemStore is a Store in memory. The zero value is ready to use; it is not
// safe for concurrent use.
type MemStore struct {
	routes map[string]Route
}

// SaveRoute inserts or replaces a route.
func (m *MemStore) SaveRoute(r Route) error {
	if m.routes == nil {
		m.routes = map[string]Route{}
	}
	m.routes[r.TaskID] = r
	return nil
}

// DeleteRoute removes a route.
func (m *MemStore) DeleteRoute(taskID string) error {
	delete(m.routes, taskID)
	return nil
}

// LoadRoutes returns every route, sorted by Task.id.
func (m *MemStore) LoadRoutes() ([]Route, error) {
	out := make([]Route, 0, len(m.routes))
	for _, r := range m.routes {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int { return cmp.Compare(a.TaskID, b.TaskID) })
	return out, nil
}
