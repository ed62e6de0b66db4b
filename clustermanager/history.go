package clustermanager

// Operations returns the cluster's operation history, newest first: the
// running operation, if any, then the last ended ones the store keeps
// (at most historyLimit), each with its kind, who started it, its start
// and end, its outcome, its per-step durations and its error.
func (m *Manager) Operations(name string) ([]Operation, error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	if !e.machine.Current().Listed() {
		return nil, notFound(name)
	}
	ended, err := m.repo.history(name)
	if err != nil {
		return nil, err
	}
	if op := e.record().LastOperation; op.running() {
		return append([]Operation{*op.clone()}, ended...), nil
	}
	return ended, nil
}
