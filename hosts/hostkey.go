package hosts

// PinnedHostKey returns the SSH host key pinned for host name (in
// authorized_keys format), "" when none is pinned yet: what a connection
// made for the host outside the probe (a host check) must find.
func (m *Manager) PinnedHostKey(name string) (string, error) {
	h, err := m.Get(name)
	if err != nil {
		return "", err
	}
	return h.HostKey, nil
}
