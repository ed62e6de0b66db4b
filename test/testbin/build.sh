#!/usr/bin/env bash
# Builds the testbed's binaries and images once and caches them outside the
# repository. A second run with unchanged inputs returns in seconds.
#
# Flannel (test/testbin/flannel/go.mod: v0.28.10) is built as upstream
# builds it for amd64: flanneld with cgo (its UDP backend is C on amd64),
# linked statically; its image, ghcr.io/flannel-io/flannel:v0.28.10 (the
# name zke deploys), holds flanneld and install-conf in /opt/bin with the
# kube-proxy image's iptables (images/flannel.tar).
#
# containerd v2.4.2 (test/testbin/containerd2/go.mod), for testbed hosts
# with HostOptions.Containerd2: containerd, ctr and containerd-shim-runc-v2
# in $out/containerd2/bin (not bin/, so that they never shadow Debian's
# containerd 1.6), built as upstream's Makefile builds them where btrfs's
# headers are missing (tag no_btrfs); the shim static, without cgo.
#
#   SINGLECLOUD_TESTBIN  output directory (default $HOME/.cache/singlecloud/testbin/v1.37.2)
set -euo pipefail

KUBE_VERSION=v1.37.2
# The release before it, for upgrade tests: its Kubernetes binaries go to
# $out/$PREVIOUS_VERSION/bin and its images to images/<name>-$PREVIOUS_VERSION.tar.
# The images carry zke's default names (zke/images.go: registry.k8s.io and
# kubeadm's tags); the kubelet's binary runs in debian:bookworm-slim, built
# from Debian's packages with mmdebstrap (debian/rootfs-bookworm.tar, made
# once and kept: it changes only when Debian's packages do).
PREVIOUS_VERSION=v1.36.3
# Its etcd (kubeadm's for it, 3.6.8-0), built from test/testbin/etcd-v3.6.8
# into $out/$PREVIOUS_VERSION/bin: an upgrade moves etcd up a minor
# release, and a revert takes it down again through etcd's downgrade.
PREVIOUS_ETCD=v3.6.8
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${SINGLECLOUD_TESTBIN:-$HOME/.cache/singlecloud/testbin/$KUBE_VERSION}
mkdir -p "$out/bin" "$out/images"

# The kube-proxy image carries this machine's iptables (Debian's
# package), which they run.
iptables_dir=/usr/sbin
xtables_dir=/usr/lib/x86_64-linux-gnu/xtables
iptables_bins=""
for v in nft legacy; do
	if [ -x "$iptables_dir/xtables-$v-multi" ]; then iptables_bins="$iptables_bins $iptables_dir/xtables-$v-multi"; fi
done
if [ -z "$iptables_bins" ] || [ ! -d "$xtables_dir" ]; then
	echo "testbin: iptables not found ($iptables_dir/xtables-{nft,legacy}-multi, $xtables_dir): apt-get install iptables" >&2
	exit 1
fi
# Every file copied for iptables: the binaries, their modules and the shared
# libraries both need.
# shellcheck disable=SC2086
iptables_inputs=$(printf '%s\n' $iptables_bins "$xtables_dir"/*.so $(ldd $iptables_bins "$xtables_dir"/*.so |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }') | sort -u)

# The haproxy and keepalived images (the control plane's shared endpoint,
# under the names zke deploys: haproxy:3.2.21, osixia/keepalived:2.3.4)
# carry Debian's haproxy and keepalived and their shared libraries.
lb_dir=/usr/sbin
for b in haproxy keepalived; do
	[ -x "$lb_dir/$b" ] || { echo "testbin: $lb_dir/$b not found: apt-get install haproxy keepalived" >&2; exit 1; }
done
lb_inputs=$(printf '%s\n' "$lb_dir/haproxy" "$lb_dir/keepalived" $(ldd "$lb_dir/haproxy" "$lb_dir/keepalived" |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }') | sort -u)

# The stamp covers every input; when it matches, nothing is rebuilt.
# shellcheck disable=SC2086
stamp=$( (cat "$here"/build.sh "$here"/kube/go.mod "$here"/kube/go.sum "$here"/etcd/go.mod "$here"/etcd/go.sum \
	"$here/kube-$PREVIOUS_VERSION"/go.mod "$here/kube-$PREVIOUS_VERSION"/go.sum \
	"$here/etcd-$PREVIOUS_ETCD"/go.mod "$here/etcd-$PREVIOUS_ETCD"/go.sum \
	"$here"/coredns/go.mod "$here"/coredns/go.sum "$here"/cni/go.mod "$here"/cni/go.sum \
	"$here"/flannel/go.mod "$here"/flannel/go.sum "$here"/containerd2/go.mod "$here"/containerd2/go.sum \
	"$here"/pause/*.go "$here"/mkimage/*.go "$repo"/zke/images.go "$repo"/internal/model/images.go; go version; sha256sum /bin/busybox /usr/bin/busybox 2>/dev/null || true
	sha256sum $iptables_inputs $lb_inputs) | sha256sum | cut -d' ' -f1)
kube_images="kube-apiserver kube-controller-manager kube-scheduler kube-proxy"
debian_rootfs=debian/rootfs-bookworm.tar
# The CNI plugins' release tarball, as upstream publishes it, in the file
# mirror the tests serve to singlecloud (--artifact-mirror).
CNI_VERSION=v1.9.0
cni_release=mirror/github.com/containernetworking/plugins/releases/download/$CNI_VERSION/cni-plugins-linux-amd64-$CNI_VERSION.tgz
outputs="$cni_release $cni_release.sha256 mirror/dl.k8s.io/release/$KUBE_VERSION/bin/linux/amd64/kubelet.sha256
	mirror/dl.k8s.io/release/$PREVIOUS_VERSION/bin/linux/amd64/kubelet.sha256 bin/kube-apiserver bin/kube-controller-manager bin/kube-scheduler bin/kubelet bin/kube-proxy bin/etcd bin/etcdctl bin/etcdutl
	bin/coredns bin/flanneld bin/install-conf bin/pause bin/busybox $debian_rootfs images/kubelet.tar images/etcd.tar images/etcd-$PREVIOUS_VERSION.tar images/pause.tar images/busybox.tar
	images/coredns.tar images/haproxy.tar images/keepalived.tar images/flannel.tar
	containerd2/bin/containerd containerd2/bin/ctr containerd2/bin/containerd-shim-runc-v2
	$(for i in $kube_images; do printf ' images/%s.tar images/%s-%s.tar' "$i" "$i" "$PREVIOUS_VERSION"; done)
	$(for b in $kube_images kubelet etcd etcdctl etcdutl; do printf ' %s/bin/%s' "$PREVIOUS_VERSION" "$b"; done)"
complete=true
for f in $outputs; do [ -f "$out/$f" ] || complete=false; done
if $complete && [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ]; then
	echo "testbin: up to date in $out"
	exit 0
fi

busybox=$(command -v busybox || true)
if [ -z "$busybox" ] || ! file -L "$busybox" 2>/dev/null | grep -q 'statically linked'; then
	for b in /bin/busybox /usr/bin/busybox; do
		if [ -x "$b" ]; then busybox=$b; fi
	done
fi
[ -n "$busybox" ] || { echo "testbin: busybox not found: apt-get install busybox-static" >&2; exit 1; }
# flanneld links C (its UDP backend on amd64) statically against glibc.
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] && command -v gcc >/dev/null ||
	{ echo "testbin: gcc or libc.a not found (flanneld is built with cgo): apt-get install gcc libc6-dev" >&2; exit 1; }

# kube_ldflags stamps version $1 into the Kubernetes binaries.
kube_ldflags() {
	local v=$1 major minor
	major=${v#v}; minor=${major#*.}; minor=${minor%%.*}; major=${major%%.*}
	printf '%s' "-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
	printf '%s' " -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
}

# The module downloads are retried: a module proxy that answers 503 once
# must not fail a whole CI run.
fetch() {
	local dir=$1 try
	for try in 1 2 3 4; do
		if ( cd "$dir" && GOFLAGS=-mod=mod go mod download ); then return 0; fi
		echo "testbin: downloading the modules of $dir failed (try $try); retrying" >&2
		sleep $((try * 10))
	done
	return 1
}
for d in "$here/kube" "$here/kube-$PREVIOUS_VERSION" "$here/etcd" "$here/etcd-$PREVIOUS_ETCD" "$here/coredns" "$here/cni" "$here/flannel" "$here/containerd2"; do fetch "$d"; done

echo "testbin: building Kubernetes $KUBE_VERSION into $out/bin (cold: ~7 min)"
start=$(date +%s)
( cd "$here/kube" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$(kube_ldflags "$KUBE_VERSION")" -o "$out/bin/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy )
echo "testbin: building Kubernetes $PREVIOUS_VERSION into $out/$PREVIOUS_VERSION/bin (cold: ~7 min)"
mkdir -p "$out/$PREVIOUS_VERSION/bin"
( cd "$here/kube-$PREVIOUS_VERSION" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$(kube_ldflags "$PREVIOUS_VERSION")" \
	-o "$out/$PREVIOUS_VERSION/bin/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy )
echo "testbin: building etcd, etcdctl and etcdutl (test/testbin/etcd/go.mod: v3.7.0)"
# One package per build: -o names the binary, and go build skips the link
# when the binary already there carries the same build ID.
( cd "$here/etcd" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3 )
( cd "$here/etcd" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/bin/etcdctl" go.etcd.io/etcd/etcdctl/v3 )
( cd "$here/etcd" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/bin/etcdutl" go.etcd.io/etcd/etcdutl/v3 )
echo "testbin: building etcd $PREVIOUS_ETCD into $out/$PREVIOUS_VERSION/bin (test/testbin/etcd-$PREVIOUS_ETCD/go.mod)"
for c in server etcdctl etcdutl; do
	b=$c; [ "$c" = server ] && b=etcd
	( cd "$here/etcd-$PREVIOUS_ETCD" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" \
		-o "$out/$PREVIOUS_VERSION/bin/$b" "go.etcd.io/etcd/$c/v3" )
done
echo "testbin: building the CNI plugins $CNI_VERSION into the mirror"
mkdir -p "$out/cni" "$out/$(dirname "$cni_release")"
cni_plugins="bridge host-local loopback portmap"
( cd "$here/cni" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
	-ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_VERSION" -o "$out/cni/" \
	github.com/containernetworking/plugins/plugins/main/bridge github.com/containernetworking/plugins/plugins/ipam/host-local \
	github.com/containernetworking/plugins/plugins/main/loopback github.com/containernetworking/plugins/plugins/meta/portmap )
# shellcheck disable=SC2086
( cd "$out/cni" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - $(printf './%s ' $cni_plugins) ) |
	gzip -n > "$out/$cni_release"
( cd "$out/$(dirname "$cni_release")" && sha256sum "$(basename "$cni_release")" > "$(basename "$cni_release").sha256" )
# The kubelets, as dl.k8s.io publishes them (a .sha256 holding the digest
# alone), in the file mirror.
for v in "$KUBE_VERSION" "$PREVIOUS_VERSION"; do
	src="$out/bin/kubelet"; [ "$v" = "$KUBE_VERSION" ] || src="$out/$v/bin/kubelet"
	d="$out/mirror/dl.k8s.io/release/$v/bin/linux/amd64"
	mkdir -p "$d" && cp -f "$src" "$d/kubelet"
	sha256sum "$d/kubelet" | cut -d' ' -f1 > "$d/kubelet.sha256"
done
echo "testbin: building CoreDNS (test/testbin/coredns/go.mod: v1.14.6)"
( cd "$here/coredns" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/bin/coredns" github.com/coredns/coredns )
FLANNEL_VERSION=v0.28.10
echo "testbin: building flanneld and install-conf (test/testbin/flannel/go.mod: $FLANNEL_VERSION; cold: ~2 min)"
# As upstream's Makefile builds flanneld for amd64: cgo on (the UDP
# backend's proxy is C), linked statically; netgo and osusergo keep glibc's
# NSS out of the static binary.
( cd "$here/flannel" && CGO_ENABLED=1 GOFLAGS=-mod=mod go build -trimpath -tags netgo,osusergo \
	-ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION -extldflags -static" \
	-o "$out/bin/flanneld" github.com/flannel-io/flannel )
( cd "$here/flannel" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/bin/install-conf" \
	github.com/flannel-io/flannel/cmd/install_conf )
CONTAINERD2_VERSION=v2.4.2
echo "testbin: building containerd $CONTAINERD2_VERSION into $out/containerd2/bin (test/testbin/containerd2/go.mod; cold: ~3 min)"
# As upstream's Makefile builds them: its tags (urfave_cli_no_docs, and
# no_btrfs as without btrfs's headers), its version stamp; the shim with
# cgo off and no_grpc, linked statically.
containerd2_pkg=github.com/containerd/containerd/v2
containerd2_ldflags="-s -w -X $containerd2_pkg/version.Version=$CONTAINERD2_VERSION -X $containerd2_pkg/version.Package=$containerd2_pkg"
mkdir -p "$out/containerd2/bin"
( cd "$here/containerd2" && GOFLAGS=-mod=mod go build -trimpath -tags "urfave_cli_no_docs no_btrfs" -ldflags "$containerd2_ldflags" \
	-o "$out/containerd2/bin/" $containerd2_pkg/cmd/containerd $containerd2_pkg/cmd/ctr )
( cd "$here/containerd2" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags "urfave_cli_no_docs no_btrfs no_grpc" \
	-ldflags "$containerd2_ldflags -extldflags -static" -o "$out/containerd2/bin/containerd-shim-runc-v2" $containerd2_pkg/cmd/containerd-shim-runc-v2 )
( cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/bin/pause" ./test/testbin/pause )
cp -f "$busybox" "$out/bin/busybox"

if [ ! -f "$out/$debian_rootfs" ]; then
	command -v mmdebstrap >/dev/null || { echo "testbin: mmdebstrap not found: apt-get install mmdebstrap" >&2; exit 1; }
	echo "testbin: building Debian bookworm (minbase) with mmdebstrap, the kubelet's image (~30 s)"
	mkdir -p "$out/debian"
	SOURCE_DATE_EPOCH=0 mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
		bookworm "$out/$debian_rootfs.part" http://deb.debian.org/debian
	mv "$out/$debian_rootfs.part" "$out/$debian_rootfs"
fi
echo "testbin: writing images into $out/images"
( cd "$repo" && go run ./test/testbin/mkimage -bin "$out/bin" -out "$out/images" -kube-version "$KUBE_VERSION" -debian-rootfs "$out/$debian_rootfs" \
	-iptables-dir "$iptables_dir" -xtables-dir "$xtables_dir" -lb-dir "$lb_dir" \
	-previous-bin "$out/$PREVIOUS_VERSION/bin" -previous-version "$PREVIOUS_VERSION" )
echo "$stamp" > "$out/stamp"
echo "testbin: done in $(( $(date +%s) - start ))s"
