package clustermanager

import "github.com/zdnscloud/singlecloud/internal/model"

// splitConfig separates cfg's secrets (the SSH key, registry passwords)
// from the rest: the config is kept and shown without them, the secrets
// are sealed. The returned config shares nothing with cfg.
func splitConfig(cfg model.ClusterConfig) (model.ClusterConfig, secrets) {
	s := secrets{SSHKey: cfg.SSHKey}
	cfg.SSHKey = ""
	cfg.Nodes = append([]model.Node(nil), cfg.Nodes...)
	cfg.PrivateRegistries = append([]model.PrivateRegistry(nil), cfg.PrivateRegistries...)
	for i, r := range cfg.PrivateRegistries {
		if r.Password != "" {
			if s.RegistryPasswords == nil {
				s.RegistryPasswords = map[string]string{}
			}
			s.RegistryPasswords[r.URL] = r.Password
			cfg.PrivateRegistries[i].Password = ""
		}
	}
	return cfg, s
}

// fullConfig is the record's config with its secrets put back, for the
// installer and for validating an update.
func (r *record) fullConfig() model.ClusterConfig {
	cfg := *r.Config
	cfg.SSHKey = r.secrets.SSHKey
	cfg.PrivateRegistries = append([]model.PrivateRegistry(nil), cfg.PrivateRegistries...)
	for i, reg := range cfg.PrivateRegistries {
		if p, ok := r.secrets.RegistryPasswords[reg.URL]; ok {
			cfg.PrivateRegistries[i].Password = p
		}
	}
	return cfg
}

// keepSecrets fills the secrets an update left empty (write-only fields
// are not sent back by clients) from old.
func keepSecrets(cfg *model.ClusterConfig, old model.ClusterConfig) {
	if cfg.SSHKey == "" {
		cfg.SSHKey = old.SSHKey
	}
	prev := map[string]string{}
	for _, r := range old.PrivateRegistries {
		prev[r.URL] = r.Password
	}
	for i, r := range cfg.PrivateRegistries {
		if r.Password == "" {
			cfg.PrivateRegistries[i].Password = prev[r.URL]
		}
	}
}
