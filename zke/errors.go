package zke

import "errors"

// Sentinels of the zke package, matched with errors.Is.
var (
	// errDisruptionBudget: an eviction was refused (429) because it
	// would violate a PodDisruptionBudget; a drain retries it until it
	// times out.
	errDisruptionBudget = errors.New("eviction refused by a PodDisruptionBudget")
	// errEtcdMemberGone: a member zke added is no longer in etcd's
	// member list.
	errEtcdMemberGone = errors.New("no longer in the etcd member list (removed by hand?)")
)
