#!/usr/bin/env bash
# Builds the Debian 12 virtual machine the end-to-end tests boot with QEMU
# (testbed.StartVM) and caches it outside the repository: a machine as a
# user has it, from Debian's packages only (mmdebstrap), with systemd,
# cgroup v2, Debian's containerd and Docker in their packages' default
# configuration, and OpenSSH. Nothing zke needs is put there: the CNI
# plugins, the kubelet and every image come from zke at install time.
#
# The only addition is the machine's network setup, as a provisioner
# (cloud-init, a DHCP server) would do it: vmnet.service reads the address,
# gateway, DNS server, hostname and root's SSH key from the kernel command
# line (vm.addr=, vm.gw=, vm.dns=, vm.name=, vm.key=) at every boot.
#
# Output: vmlinuz, initrd.img and rootfs.img (ext4, labelled root, booted
# through a copy-on-write overlay so the image is never written), and a
# stamp naming this script's checksum; a second run with an unchanged
# script returns at once. About 1–5 min and 1 GB of packages the first time.
#
#   SINGLECLOUD_VM  output directory (default $HOME/.cache/singlecloud/vm/debian12)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${SINGLECLOUD_VM:-$HOME/.cache/singlecloud/vm/debian12}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The stamp covers every file that goes into the image.
stamp=$(cat "$here/build.sh" "$here/vmnet" "$here/vmnet.service" | sha256sum | cut -d' ' -f1)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] &&
	[ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ] && [ -f "$out/rootfs.img" ]; then
	echo "vm: $out is up to date"
	exit 0
fi
# mmdebstrap's root mode, and mkfs.ext4 reading every file of the tree.
[ "$(id -u)" = 0 ] || { echo "vm: run as root (the image's files belong to root)" >&2; exit 1; }
for p in mmdebstrap mkfs.ext4 qemu-system-x86_64 qemu-img; do
	command -v "$p" >/dev/null || { echo "vm: $p not found: apt-get install mmdebstrap e2fsprogs qemu-system-x86 qemu-utils" >&2; exit 1; }
done
start=$(date +%s)
mkdir -p "$(dirname "$out")"
# Everything is built in a directory of this run's own, moved into place
# at the end; only that directory is ever removed.
work=$(mktemp -d "$out.build.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

packages=systemd,systemd-sysv,udev,dbus,openssh-server,containerd,docker.io,apparmor,iproute2,iptables,kmod,linux-image-amd64,initramfs-tools,procps,ca-certificates

# The hooks run in a shell of mmdebstrap's, with the tree as $1; this
# directory reaches them through the environment, never pasted into them.
export VMSRC="$here"
# shellcheck disable=SC2016 # expanded by mmdebstrap's hook shell
mmdebstrap --variant=minbase --include="$packages" \
	--customize-hook='echo "LABEL=root / ext4 errors=remount-ro 0 1" > "$1/etc/fstab"' \
	--customize-hook='install -m 0755 "$VMSRC/vmnet" "$1/usr/local/sbin/vmnet"' \
	--customize-hook='install -m 0644 "$VMSRC/vmnet.service" "$1/etc/systemd/system/vmnet.service"' \
	--customize-hook='ln -sf /etc/systemd/system/vmnet.service "$1/etc/systemd/system/multi-user.target.wants/vmnet.service"' \
	--customize-hook='rm -f "$1/etc/hostname" "$1/etc/resolv.conf"' \
	bookworm "$work/root" "$mirror"

cp "$work"/root/boot/vmlinuz-* "$work/vmlinuz"
cp "$work"/root/boot/initrd.img-* "$work/initrd.img"
# A sparse 8 GiB file system: the packages take 1 GB, the images zke loads
# and the containers' layers the rest.
mkfs.ext4 -q -F -L root -d "$work/root" "$work/rootfs.img" 8G
echo "$stamp" > "$work/stamp"
mkdir -p "$out"
for f in vmlinuz initrd.img rootfs.img stamp; do
	mv -f "$work/$f" "$out/$f"
done
echo "vm: built $out in $(( $(date +%s) - start ))s"
