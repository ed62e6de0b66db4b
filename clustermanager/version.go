package clustermanager

import (
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// listOne asks for a single item: enough to prove read access and learn
// the total count without transferring every node of a large cluster.
var listOne = metav1.ListOptions{Limit: 1}

// parseVersion reads the gitVersion out of a /version answer.
func parseVersion(raw []byte) (string, error) {
	var info version.Info
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", fmt.Errorf("decode /version: %w", err)
	}
	if info.GitVersion == "" {
		return "", errors.New("decode /version: no gitVersion")
	}
	return info.GitVersion, nil
}
