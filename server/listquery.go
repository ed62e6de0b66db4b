package server

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
)

// The bounds of GET /clusters?limit=.
const (
	minListLimit = 1
	maxListLimit = 500
)

// listSorts returns the orders GET /clusters?sort= accepts (a new slice
// each time: no package-level state to change). Status (by its name) and
// creation time break ties by the name ascending, so every order is total
// and a page boundary is a point in it.
func listSorts() []string {
	return []string{"name", "-name", "status", "-status", "createdAt", "-createdAt"}
}

// isListSort reports whether s is one of listSorts.
func isListSort(s string) bool {
	switch s {
	case "name", "-name", "status", "-status", "createdAt", "-createdAt":
		return true
	}
	return false
}

// listQuery is a parsed GET /clusters?limit=&continue=&sort=&q=&status=.
// The zero value (no parameter given) is the whole list, as before these
// parameters existed.
type listQuery struct {
	set      bool // any of the parameters below was given
	limit    int  // 0: no limit
	sort     string
	after    *listCursor // the last item of the previous page
	q        string      // lower case
	statuses map[fsm.State]bool
}

// listCursor is what a continue token holds: the sort it was issued for
// and the sort key and name of the last cluster of its page. Being a point
// in the order rather than an offset, it stays valid while clusters are
// added and removed: the next page starts after it, wherever it now is.
type listCursor struct {
	Sort string `json:"s"`
	Name string `json:"n"`
	// Key is the sort key of that cluster when the sort is not by name:
	// its status, or its creation time in RFC 3339 with nanoseconds.
	Key string `json:"k,omitempty"`
}

// parseListQuery reads the list parameters of v. A parameter given empty
// counts as not given. Each bad value is a 422 InvalidOption naming the
// parameter.
func parseListQuery(v url.Values) (listQuery, error) {
	lq := listQuery{sort: "name"}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < minListLimit || n > maxListLimit {
			return lq, invalidOption(fmt.Sprintf("limit: %q is not an integer from %d to %d", shortened(s), minListLimit, maxListLimit))
		}
		lq.limit, lq.set = n, true
	}
	if s := v.Get("sort"); s != "" {
		if !isListSort(s) {
			return lq, invalidOption(fmt.Sprintf("sort: %q is not one of %s", shortened(s), strings.Join(listSorts(), ", ")))
		}
		lq.sort, lq.set = s, true
	}
	if s := v.Get("continue"); s != "" {
		c, err := decodeCursor(s)
		if err != nil {
			return lq, invalidOption("continue: the token is not one this server issued; start again without continue")
		}
		if c.Sort != lq.sort {
			return lq, invalidOption(fmt.Sprintf("continue: the token was issued for sort=%s, not sort=%s; send the same sort with it", c.Sort, lq.sort))
		}
		lq.after, lq.set = &c, true
	}
	if s := v.Get("q"); s != "" {
		lq.q, lq.set = strings.ToLower(s), true
	}
	if s := v.Get("status"); s != "" {
		lq.statuses = map[fsm.State]bool{}
		for _, part := range strings.Split(s, ",") {
			st, ok := stateNamed(strings.TrimSpace(part))
			if !ok {
				return lq, invalidOption(fmt.Sprintf("status: %q is not a cluster state; use one or a comma-separated list of %s", shortened(part), strings.Join(stateNames(), ", ")))
			}
			lq.statuses[st] = true
		}
		lq.set = true
	}
	return lq, nil
}

// stateNamed finds the state called name, in any case.
func stateNamed(name string) (fsm.State, bool) {
	for _, s := range fsm.States() {
		if s != fsm.StateNew && strings.EqualFold(string(s), name) {
			return s, true
		}
	}
	return "", false
}

// stateNames lists the states a status filter may name.
func stateNames() []string {
	var out []string
	for _, s := range fsm.States() {
		if s != fsm.StateNew {
			out = append(out, string(s))
		}
	}
	return out
}

func decodeCursor(token string) (listCursor, error) {
	var c listCursor
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, err
	}
	if c.Name == "" || !isListSort(c.Sort) {
		return c, fmt.Errorf("incomplete cursor")
	}
	if strings.HasSuffix(c.Sort, "createdAt") {
		if _, err := time.Parse(time.RFC3339Nano, c.Key); err != nil {
			return c, err
		}
	}
	return c, nil
}

func encodeCursor(c listCursor) string {
	raw, _ := json.Marshal(c) // strings only: cannot fail
	return base64.RawURLEncoding.EncodeToString(raw)
}

// cursorOf is the cursor that points at c in sort.
func cursorOf(sort string, c *clustermanager.Cluster) listCursor {
	cur := listCursor{Sort: sort, Name: c.Name}
	switch strings.TrimPrefix(sort, "-") {
	case "status":
		cur.Key = string(c.Status)
	case "createdAt":
		cur.Key = c.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	return cur
}

// matches reports whether c passes the filters q and status.
func (lq listQuery) matches(c *clustermanager.Cluster) bool {
	if lq.statuses != nil && !lq.statuses[c.Status] {
		return false
	}
	return lq.q == "" || strings.Contains(strings.ToLower(c.Name), lq.q)
}

// sortKey is one cluster's place in an order: its key (status, or
// creation time) and its name.
type sortKey struct {
	status  string
	created time.Time
	name    string
}

func keyOf(c *clustermanager.Cluster) sortKey {
	return sortKey{status: string(c.Status), created: c.CreatedAt, name: c.Name}
}

func keyOfCursor(c listCursor) sortKey {
	k := sortKey{name: c.Name}
	switch strings.TrimPrefix(c.Sort, "-") {
	case "status":
		k.status = c.Key
	case "createdAt":
		k.created, _ = time.Parse(time.RFC3339Nano, c.Key) // checked by decodeCursor
	}
	return k
}

// compareKeys orders a and b in sort: by its key, ascending or (with "-")
// descending, and then by name ascending ("-name" is by name descending).
func compareKeys(sort string, a, b sortKey) int {
	switch sort {
	case "-name":
		return cmp.Compare(b.name, a.name)
	case "status", "-status":
		if c := cmp.Compare(a.status, b.status); c != 0 {
			if sort == "-status" {
				return -c
			}
			return c
		}
	case "createdAt", "-createdAt":
		if c := a.created.Compare(b.created); c != 0 {
			if sort == "-createdAt" {
				return -c
			}
			return c
		}
	}
	return cmp.Compare(a.name, b.name)
}

// listPage is one page of a filtered, sorted list.
type listPage struct {
	items []clustermanager.Cluster
	total int    // clusters matching the filters, on every page
	next  string // token for the next page; empty on the last
}

// page filters all (sorted by name, as the manager lists them) by allowed
// and the query, counts what passes, keeps what comes after the cursor,
// sorts that and cuts the page. Only pointers are sorted: a view is a few
// hundred bytes.
func (lq listQuery) page(all []clustermanager.Cluster, allowed func(string) bool) listPage {
	var after *sortKey
	if lq.after != nil {
		k := keyOfCursor(*lq.after)
		after = &k
	}
	var p listPage
	rest := make([]*clustermanager.Cluster, 0, len(all))
	for i := range all {
		c := &all[i]
		if !allowed(c.Name) || !lq.matches(c) {
			continue
		}
		p.total++
		if after != nil && compareKeys(lq.sort, keyOf(c), *after) <= 0 {
			continue // at or before the cursor: on an earlier page
		}
		rest = append(rest, c)
	}
	switch lq.sort {
	case "name":
		// already in this order
	case "-name":
		slices.Reverse(rest)
	default:
		// The order is total (names are unique), so no need for a
		// stable sort.
		slices.SortFunc(rest, func(a, b *clustermanager.Cluster) int { return compareKeys(lq.sort, keyOf(a), keyOf(b)) })
	}
	if lq.limit > 0 && lq.limit < len(rest) {
		rest = rest[:lq.limit]
		p.next = encodeCursor(cursorOf(lq.sort, rest[len(rest)-1]))
	}
	p.items = make([]clustermanager.Cluster, len(rest))
	for i, c := range rest {
		p.items[i] = *c
	}
	return p
}
