package storage

// The buckets of schema version 1 (SPEC §5). Open creates any that are missing.
const (
	// BucketClusters maps a cluster name to its record (config, install
	// state, unavailable flag, last operation, timestamps).
	BucketClusters Bucket = "clusters"
	// BucketOperations holds each cluster's operation history under
	// "<cluster>/<start time>": its last operations, oldest first.
	BucketOperations Bucket = "operations"
	// BucketOperationLogs holds each operation's durable log lines.
	BucketOperationLogs Bucket = "oplogs"
	// BucketUsers maps a user name to its record.
	BucketUsers Bucket = "users"
	// BucketSettings holds install-wide values: the schema version and the
	// JWT secret.
	BucketSettings Bucket = "settings"
	// BucketHosts maps a registered host's name to its record (how to
	// reach it, its sealed SSH key, its last observed status and system
	// information).
	BucketHosts Bucket = "hosts"
	// BucketHostCommands holds the last commands run on hosts (who ran
	// what where, and each host's result), keyed by a time-ordered id.
	BucketHostCommands Bucket = "hostcommands"
	// BucketEnvironments maps an environment of hosts to its definition
	// (its selector); clusters are environments without a row here.
	BucketEnvironments Bucket = "environments"
	// BucketApplications maps "<environment>/<application>" to the
	// application instance: its spec, phase and why.
	BucketApplications Bucket = "applications"
	// BucketApplicationLogs holds each application instance's log lines
	// under "<environment>/<application>/<sequence>".
	BucketApplicationLogs Bucket = "applogs"
)

// SchemaVersion is written into BucketSettings on first open and checked on
// every later open, so an older binary never misreads a newer file.
const SchemaVersion = "1"

// SettingSchemaVersion is the settings key holding SchemaVersion.
const SettingSchemaVersion = "schemaVersion"

// SchemaVersionIncomplete is the schema version a database holds while a
// restore (package backup) writes into it: every open refuses it with
// ErrSchemaVersion, printing this value, so that a restore interrupted half
// way is never served; the restore's last write puts SchemaVersion. Only
// the restore itself opens such a database (EtcdOptions.AllowIncomplete).
const SchemaVersionIncomplete = "restore incomplete: run singlecloud restore --force again"

// SettingClusterSecretsBound is the settings key that records that every
// cluster row's secrets were re-sealed bound to their row (clustermanager
// does it at its first start with row binding). Once it is set, a secret
// sealed without row binding in a cluster row is refused: only a copy from
// another row could have put it there.
const SettingClusterSecretsBound = "clusterSecretsBound"

// SettingStepDurations is the settings key holding the durations that
// finished operation steps took, which estimate how long a running
// operation still needs.
const SettingStepDurations = "stepDurations"

// obsoleteBuckets are buckets of earlier releases that nothing reads any
// more; opening a file drops them. "checkpoints" held a copy of each
// install's finished steps, which the cluster record already carries.
func obsoleteBuckets() []Bucket { return []Bucket{"checkpoints"} }

// Buckets lists every bucket of the schema, in creation order.
func Buckets() []Bucket {
	return []Bucket{BucketClusters, BucketOperations, BucketOperationLogs, BucketUsers, BucketSettings, BucketHosts, BucketHostCommands, BucketEnvironments, BucketApplications, BucketApplicationLogs}
}
