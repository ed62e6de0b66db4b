package runtime

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The CRI calls that list and tear down pod sandboxes, as the kubelet
// does when it deletes a pod: stopping a sandbox makes the runtime run
// the CNI plugins' DEL (the pod's address released, its port mappings
// and veth removed) and release its network namespace, which killing its
// containers alone does not.
const (
	criListPodSandboxPath   = "/runtime.v1.RuntimeService/ListPodSandbox"
	criStopPodSandboxPath   = "/runtime.v1.RuntimeService/StopPodSandbox"
	criRemovePodSandboxPath = "/runtime.v1.RuntimeService/RemovePodSandbox"
)

// criMaxPodList bounds a ListPodSandbox answer: a few hundred bytes per
// sandbox, for thousands of them.
const criMaxPodList = 16 << 20

// CRIPod is a pod sandbox a CRI runtime holds.
type CRIPod struct {
	// ID is the runtime's sandbox ID.
	ID string
	// Name, Namespace and UID are the Kubernetes pod's, from the
	// sandbox's metadata.
	Name, Namespace, UID string
}

// CRIListPods lists every pod sandbox of the runtime at socket (through
// d, as CRIVersion), ready or not.
func CRIListPods(ctx context.Context, d Dialer, socket string, timeout time.Duration) ([]CRIPod, error) {
	msg, err := criUnary(ctx, d, socket, criListPodSandboxPath, nil, criMaxPodList, timeout)
	if err != nil {
		return nil, err
	}
	pods, err := parseListPodSandbox(msg)
	if err != nil {
		return nil, &CRIError{Socket: socket, Call: criListPodSandboxPath, Kind: ErrCRIUnreachable, Err: err}
	}
	return pods, nil
}

// CRIRemovePod stops the pod sandbox id (the runtime tears down its
// network through the CNI plugins and kills its containers) and removes
// it, each call bounded by timeout.
func CRIRemovePod(ctx context.Context, d Dialer, socket, id string, timeout time.Duration) error {
	req := protowire.AppendTag(nil, 1, protowire.BytesType)
	req = protowire.AppendString(req, id)
	if _, err := criUnary(ctx, d, socket, criStopPodSandboxPath, req, criMaxMessage, timeout); err != nil {
		return err
	}
	_, err := criUnary(ctx, d, socket, criRemovePodSandboxPath, req, criMaxMessage, timeout)
	return err
}

// parseListPodSandbox decodes a ListPodSandboxResponse: items (1) of
// PodSandbox, each with id (1) and metadata (2: name 1, uid 2,
// namespace 3).
func parseListPodSandbox(b []byte) ([]CRIPod, error) {
	var pods []CRIPod
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		var p CRIPod
		err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case num == 1 && typ == protowire.BytesType:
				p.ID = string(v)
			case num == 2 && typ == protowire.BytesType:
				return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
					if typ != protowire.BytesType {
						return nil
					}
					switch num {
					case 1:
						p.Name = string(v)
					case 2:
						p.UID = string(v)
					case 3:
						p.Namespace = string(v)
					}
					return nil
				})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if p.ID == "" {
			return fmt.Errorf("a pod sandbox without an id")
		}
		pods = append(pods, p)
		return nil
	})
	return pods, err
}
