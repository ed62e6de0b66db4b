package operators

import (
	"context"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// stubOperator names the environment it was created for; the registry
// never calls it.
type stubOperator struct{ env model.Environment }

func (s *stubOperator) Apply(context.Context, *model.ApplyRequest) (*model.ApplyResponse, error) {
	return &model.ApplyResponse{Success: true}, nil
}
func (s *stubOperator) GetApplicationStatus(_ context.Context, app string) (*model.ApplicationStatus, error) {
	return &model.ApplicationStatus{App: app + "@" + s.env.Name}, nil
}
func (s *stubOperator) Uninstall(context.Context, string) error { return nil }
func (s *stubOperator) HealthCheck(context.Context) error       { return nil }
func (s *stubOperator) GetType() string                         { return s.env.Kind }

func TestRegistryCreatesOnePerEnvironmentDefinition(t *testing.T) {
	created := 0
	reg := NewRegistry(Factory{model.EnvironmentHosts: func(env model.Environment, _ Desired) (Operator, error) {
		created++
		return &stubOperator{env: env}, nil
	}})
	edge := model.Environment{Name: "edge", Kind: model.EnvironmentHosts, Selector: "rack=a"}
	a, err := reg.Operator(edge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := reg.Operator(edge, nil); b != a || created != 1 {
		t.Errorf("the same environment twice: %d operators created", created)
	}
	moved := edge
	moved.Selector = "rack=b"
	if c, _ := reg.Operator(moved, nil); c == a || created != 2 {
		t.Errorf("a changed selector kept its operator (%d created)", created)
	}
	reg.Forget("edge")
	if _, _ = reg.Operator(moved, nil); created != 3 {
		t.Errorf("after Forget: %d created, want 3", created)
	}
	st, err := reg.GetApplicationStatus(context.Background(), moved, nil, "web")
	if err != nil || st.App != "web@edge" {
		t.Errorf("status through the registry: %+v %v", st, err)
	}
	reg.RegisterOperator(edge, &stubOperator{env: model.Environment{Name: "other"}})
	if st, _ := reg.GetApplicationStatus(context.Background(), edge, nil, "web"); st.App != "web@other" {
		t.Errorf("a registered operator was not used: %+v", st)
	}
	if _, err := reg.Operator(model.Environment{Name: "c1", Kind: model.EnvironmentKubernetes}, nil); err == nil || !strings.Contains(err.Error(), `no operator for kind "kubernetes"`) {
		t.Errorf("an unknown kind: %v", err)
	}
}
