package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/certificates"
)

// maxExpiringWithin bounds ?expiringWithin: ten years covers every
// certificate zke issues.
const maxExpiringWithin = 10 * 365 * 24 * time.Hour

func (s *Server) registerCertificateRoutes(api *mux.Router) {
	api.Handle("/clusters/{cluster}/certificates", s.handle(s.listClusterCertificates)).Methods(http.MethodGet)
	api.Handle("/certificates", s.handle(s.listFleetCertificates)).Methods(http.MethodGet)
}

// certificateResource is one certificate in the API's envelope; its id
// is "<cluster>/<certificateId>".
type certificateResource struct {
	resourceBase
	Cluster       string    `json:"cluster"`
	CertificateID string    `json:"certificateId"`
	Kind          string    `json:"kind"`
	Node          string    `json:"node,omitempty"`
	CA            bool      `json:"ca"`
	Subject       string    `json:"subject"`
	Issuer        string    `json:"issuer"`
	SANs          []string  `json:"sans,omitempty"`
	NotBefore     time.Time `json:"notBefore"`
	// NotAfter and DaysLeft are absent for a key without expiry (the
	// service-account signing key), which has AgeDays instead.
	NotAfter *time.Time `json:"notAfter,omitempty"`
	DaysLeft *int       `json:"daysLeft,omitempty"`
	AgeDays  *int       `json:"ageDays,omitempty"`
	Error    string     `json:"error,omitempty"`
}

func newCertificateResource(cluster string, c certificates.Certificate) certificateResource {
	// A certificate has no URL of its own: it is read with its cluster's
	// calendar.
	calendar := apiPrefix + "/clusters/" + cluster + "/certificates"
	links := map[string]string{"self": calendar, "collection": calendar}
	res := certificateResource{
		resourceBase: newResourceBase(cluster+"/"+c.ID, "certificate", links, c.NotBefore),
		Cluster:      cluster, CertificateID: c.ID, Kind: c.Kind, Node: c.Node, CA: c.CA,
		Subject: c.Subject, Issuer: c.Issuer, SANs: c.SANs, NotBefore: c.NotBefore,
		AgeDays: c.AgeDays, Error: c.Error,
	}
	if c.Expires() || c.Error != "" {
		notAfter, left := c.NotAfter, c.DaysLeft
		res.NotAfter, res.DaysLeft = &notAfter, &left
	}
	return res
}

// listClusterCertificates answers GET /clusters/{cluster}/certificates:
// every certificate zke issued for the cluster and those of the
// kubeconfig singlecloud hands out, soonest expiry first. Certificates
// are public (no keys): whoever may see the cluster may see them.
func (s *Server) listClusterCertificates(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["cluster"]
	if err := s.requireGrant(r, name); err != nil {
		return err
	}
	cs, err := s.reads.Certificates(name)
	if err != nil {
		return err
	}
	data := make([]any, 0, len(cs))
	for _, c := range cs {
		data = append(data, newCertificateResource(name, c))
	}
	return writeCollection(w, "certificate", apiPrefix+"/clusters/"+name+"/certificates", data)
}

// listFleetCertificates answers GET /certificates?expiringWithin=30d: the
// certificate calendar of every cluster the user may see, soonest expiry
// first; without the parameter, every certificate.
func (s *Server) listFleetCertificates(w http.ResponseWriter, r *http.Request) error {
	g, err := s.grants(r)
	if err != nil {
		return err
	}
	var within time.Duration
	if v := r.URL.Query().Get("expiringWithin"); v != "" {
		if within, err = parseWithin(v); err != nil {
			return invalidOption(err.Error())
		}
	}
	var data []any
	for _, c := range s.reads.FleetCertificates(within) {
		if g.allows(c.Cluster) {
			data = append(data, newCertificateResource(c.Cluster, c.Certificate))
		}
	}
	return writeCollection(w, "certificate", apiPrefix+"/certificates", data)
}

// parseWithin reads a period as days ("30d") or a Go duration ("720h").
func parseWithin(v string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("expiringWithin: %q is not a number of days like 30d or a duration like 720h", v)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("expiringWithin: %q is not a number of days like 30d or a duration like 720h", v)
		}
	}
	if d <= 0 || d > maxExpiringWithin {
		return 0, fmt.Errorf("expiringWithin: %q must be more than 0 and at most 3650d", v)
	}
	return d, nil
}
