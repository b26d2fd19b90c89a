package taskstore

import (
	"sort"
	"strconv"
)

func (f Filter) match(r *Record) bool {
	if f.ContextID != "" && r.Task.ContextID != f.ContextID {
		return false
	}
	if f.State != "" && (r.Task.Status == nil || r.Task.Status.State != f.State) {
		return false
	}
	if !f.UpdatedAfter.IsZero() && r.Updated.Before(f.UpdatedAfter) {
		return false
	}
	if f.Scoped && !Visible(r.Principal, f.VisibleTo) {
		return false
	}
	return true
}

// page sorts matching records newest first and cuts one page. Page tokens
// are offsets into that order.
func page(all []Record, f Filter) (Page, error) {
	var matched []Record
	for i := range all {
		if f.match(&all[i]) {
			matched = append(matched, all[i])
		}
	}
	sort.SliceStable(matched, func(i, j int) bool {
		if !matched[i].Created.Equal(matched[j].Created) {
			return matched[i].Created.After(matched[j].Created)
		}
		return matched[i].Task.ID < matched[j].Task.ID
	})
	size := f.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	start := 0
	if f.PageToken != "" {
		n, err := strconv.Atoi(f.PageToken)
		if err != nil || n < 0 || n > len(matched) {
			return Page{}, ErrBadPageToken
		}
		start = n
	}
	end := min(start+size, len(matched))
	p := Page{Records: matched[start:end], Total: len(matched)}
	if end < len(matched) {
		p.NextPageToken = strconv.Itoa(end)
	}
	return p, nil
}

// contextOf derives a ContextInfo from the records of one context.
func contextOf(id string, all []Record) (ContextInfo, error) {
	var in []Record
	for _, r := range all {
		if r.Task.ContextID == id {
			in = append(in, r)
		}
	}
	if id == "" || len(in) == 0 {
		return ContextInfo{}, ErrNotFound
	}
	sort.SliceStable(in, func(i, j int) bool {
		if !in[i].Created.Equal(in[j].Created) {
			return in[i].Created.Before(in[j].Created)
		}
		return in[i].Task.ID < in[j].Task.ID
	})
	info := ContextInfo{ID: id}
	for _, r := range in {
		info.TaskIDs = append(info.TaskIDs, r.Task.ID)
		info.Tasks = append(info.Tasks, ContextTask{ID: r.Task.ID, Principal: r.Principal, Updated: r.Updated})
		if r.Updated.After(info.LastActive) {
			info.LastActive = r.Updated
		}
	}
	return info, nil
}
