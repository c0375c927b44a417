#!/usr/bin/env bash
# brig's own single-node Kubernetes test cluster, on this machine, on loopback and port-less
# bridges (issue 33; measured facts in ../shared/reference/kubernetes-here.md).
#
#   scripts/k8s-up.sh up      build the binaries once (scripts/k8s-build.sh), start etcd, the
#                             control plane, a separate containerd and the kubelet, import the
#                             pause and brig child images, wait for the node to be Ready and the
#                             `brig` namespace's ServiceAccount; the last line is
#                             `export KUBECONFIG=<admin kubeconfig>`
#   scripts/k8s-up.sh down    end exactly the processes `up` started (by the PIDs it recorded)
#                             and the pods' shims, unmount, remove the bridges, the network
#                             namespaces and every path it wrote (the binary cache stays)
#   scripts/k8s-up.sh status  one line per part: running or not
# The StorageClass `brig-loop` (brig's workspaces): each claim gets an ext4 image of exactly its
# size on a loop device (scripts/k8s-loop-provisioner.ts, a part `up` starts), so a full
# workspace is ENOSPC, not an eviction.
#   scripts/k8s-up.sh policy off|on
#                             stop the NetworkPolicy controller and remove every rule and ipset
#                             it wrote (a cluster whose network ignores NetworkPolicy), or start
#                             it again and wait for its chains — for the doctor's negative test
#   scripts/k8s-up.sh open NS pods of namespace NS made from now on get a bridge port that is not
#                             isolated, so pod-to-pod traffic is held back by NetworkPolicy alone
#                             (the test of enforcement); `brig` is refused
#
# What it guarantees: the API server, etcd and the kubelet listen on 127.0.0.1 or the node's
# own address on a port-less bridge; pods get one on-link IPv4 route on an isolated bridge port
# (no route to the host, the API, another pod: `bridge link … isolated on`, IPv6 off), the
# namespace `brig` enforces PodSecurity `restricted`, and kube-router's policy controller
# (built from its Go module, scripts/k8s-build.sh kube-router) enforces NetworkPolicy in the
# host's iptables filter table — its rules and ipsets are removed by `down` and `policy off`. Nothing is pulled: the pause image is
# built here (images/k8s-pause, Go, static) and brig's child image is imported from the engine.
# Environment: BRIG_K8S_STATE (default /var/lib/brig-k8s), BRIG_K8S_CACHE (the binaries),
# K8S_API_PORT (6443), BRIG_K8S_IMAGES (extra engine images to import, space separated).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
STATE="${BRIG_K8S_STATE:-/var/lib/brig-k8s}"
API_PORT="${K8S_API_PORT:-6443}"
ETCD_PORT="${K8S_ETCD_PORT:-23790}"
NODE_NAME=brig-node
NODE_BRIDGE=brigk8snode
NODE_IP=10.255.0.1
POD_BRIDGE=brigk8spods
POD_SUBNET=10.89.0.0/24
SERVICE_RANGE=10.96.0.0/24
PAUSE_IMAGE=brig.local/k8s-pause:1
PKI="$STATE/pki"
PIDS="$STATE/pids"
LOGS="$STATE/logs"
CTRD_SOCK="$STATE/containerd/containerd.sock"
ADMIN_KUBECONFIG="$STATE/admin.kubeconfig"
# Written by the kubelet, the CRI and runc whatever their configuration says (the reference's
# list): removed by `down`.
HOST_PATHS=(/var/lib/kubelet/device-plugins/kubelet.sock /var/lib/cni/results /var/lib/cni/networks/brig-k8s /var/log/pods /var/log/containers /run/containerd/fifo)

say() { printf 'k8s: %s\n' "$*" >&2; }

fail_part() {
  local part="$1" why="$2"
  say "$part failed: $why"
  if [[ -f "$LOGS/$part.log" ]]; then
    say "last lines of $LOGS/$part.log:"
    tail -n 25 "$LOGS/$part.log" | sed 's/^/    /' >&2
  fi
  say "the parts started so far keep running: scripts/k8s-up.sh down ends them"
  exit 1
}

need_root() { [[ "$(id -u)" == 0 ]] || { say "this needs root (it starts containerd and a kubelet)"; exit 1; }; }

ensure_packages() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v jq >/dev/null || missing+=(jq)
  command -v bridge >/dev/null || missing+=(iproute2)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v iptables-save >/dev/null || missing+=(iptables)
  command -v ipset >/dev/null || missing+=(ipset)
  if ((${#missing[@]})); then
    say "installing ${missing[*]} (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# ---- PKI --------------------------------------------------------------------------------
cert() { # name CN O(or -) usage(server|client|both) [SAN list]
  local name="$1" cn="$2" org="$3" usage="$4" sans="${5:-}" subj="/CN=$2" ext
  [[ "$org" != - ]] && subj="/O=$org/CN=$cn"
  [[ -f "$PKI/$name.crt" ]] && return 0
  case "$usage" in
    server) ext="extendedKeyUsage=serverAuth" ;;
    client) ext="extendedKeyUsage=clientAuth" ;;
    both) ext="extendedKeyUsage=serverAuth,clientAuth" ;;
  esac
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "$ext"
    [[ -n "$sans" ]] && echo "subjectAltName=$sans"
  } > "$PKI/$name.ext"
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

kubeconfig() { # file user cert
  local file="$1" user="$2" c="$3"
  cat > "$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: brig-k8s
  cluster:
    certificate-authority: $PKI/ca.crt
    server: https://127.0.0.1:$API_PORT
users:
- name: $user
  user:
    client-certificate: $PKI/$c.crt
    client-key: $PKI/$c.key
contexts:
- name: brig-k8s
  context: {cluster: brig-k8s, user: $user, namespace: brig}
current-context: brig-k8s
EOF
  chmod 0600 "$file"
}

make_pki() {
  mkdir -p "$PKI" && chmod 0700 "$PKI"
  if [[ ! -f "$PKI/ca.crt" ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 3650 -subj /CN=brig-k8s-ca 2>/dev/null
  fi
  cert apiserver kube-apiserver - server "IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin admin system:masters client
  cert apiserver-kubelet kube-apiserver-kubelet-client system:masters client
  cert kubelet "system:node:$NODE_NAME" system:nodes client
  cert kubelet-serving "system:node:$NODE_NAME" system:nodes server "IP:$NODE_IP,DNS:$NODE_NAME"
  cert controller-manager system:kube-controller-manager - client
  cert scheduler system:kube-scheduler - client
  if [[ ! -f "$PKI/sa.key" ]]; then
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
  kubeconfig "$ADMIN_KUBECONFIG" admin admin
  kubeconfig "$STATE/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet
  kubeconfig "$STATE/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
  kubeconfig "$STATE/scheduler.kubeconfig" system:kube-scheduler scheduler
}

# ---- processes ----------------------------------------------------------------------------
alive() { local f="$PIDS/$1.pid"; [[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null; }

start_part() { # name cmd...
  local name="$1"; shift
  if alive "$name"; then return 0; fi
  # setsid: the part outlives the shell that ran `up` (CI ends it with `down`, by PID).
  setsid "$@" > "$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$PIDS/$name.pid"
}

wait_for() { # part seconds description test-cmd...
  local part="$1" secs="$2" what="$3"; shift 3
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    alive "$part" || fail_part "$part" "it exited while waiting for $what"
    ((SECONDS < end)) || fail_part "$part" "no $what after ${secs} s"
    sleep 0.2
  done
}

KUBECTL() { "$BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# ---- network ------------------------------------------------------------------------------
make_bridges() {
  # The kubelet refuses a loopback node IP and this kernel has no dummy links: the node's
  # address sits on a bridge with no ports, so traffic to it stays on this host.
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
    sysctl -qw "net.ipv6.conf.$NODE_BRIDGE.disable_ipv6=1"
    ip addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
    ip link set "$NODE_BRIDGE" up
  fi
  # The pods' bridge: no address on the host side (isGateway false) and no IPv6, so a pod
  # has no link-local way to the host either.
  if ! ip link show "$POD_BRIDGE" >/dev/null 2>&1; then
    ip link add "$POD_BRIDGE" type bridge
    sysctl -qw "net.ipv6.conf.$POD_BRIDGE.disable_ipv6=1"
    ip link set "$POD_BRIDGE" up
  fi
}

write_cni() {
  mkdir -p "$STATE/cni/bin" "$STATE/cni/net.d"
  for p in bridge host-local loopback tuning; do ln -sf "/usr/lib/cni/$p" "$STATE/cni/bin/$p"; done
  # Debian's bridge plugin (1.1.1) has no portIsolation: this chained plugin isolates the
  # pod's host-side port, so pod-to-pod traffic over the bridge is dropped by the kernel.
  cat > "$STATE/cni/bin/brig-isolate" <<'EOF'
#!/bin/bash
set -euo pipefail
conf="$(cat)"
# The test of NetworkPolicy enforcement names namespaces whose pods keep pod-to-pod traffic
# (scripts/k8s-up.sh open NS, never `brig`): their ports stay as the bridge made them.
ns="$(tr ';' '\n' <<<"${CNI_ARGS:-}" | sed -n 's/^K8S_POD_NAMESPACE=//p')"
open_list="$(dirname "$0")/../open-namespaces"
case "${CNI_COMMAND:-}" in
  ADD)
    if [[ -n "$ns" && "$ns" != brig && -f "$open_list" ]] && grep -qx "$ns" "$open_list"; then
      jq -c '.prevResult + {cniVersion: .cniVersion}' <<<"$conf"; exit 0
    fi
    for dev in $(jq -r '.prevResult.interfaces[]? | select((.sandbox // "") == "") | .name' <<<"$conf"); do
      if [[ -e "/sys/class/net/$dev/brport" ]]; then
        bridge link set dev "$dev" isolated on
        [[ "$(cat "/sys/class/net/$dev/brport/isolated")" == 1 ]] || { echo '{"code":100,"msg":"port isolation did not hold"}'; exit 1; }
      fi
    done
    jq -c '.prevResult + {cniVersion: .cniVersion}' <<<"$conf" ;;
  DEL|CHECK) ;;
  VERSION) echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
  *) echo '{"code":4,"msg":"unknown CNI_COMMAND"}'; exit 1 ;;
esac
EOF
  chmod 0755 "$STATE/cni/bin/brig-isolate"
  cat > "$STATE/cni/net.d/10-brig.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "brig-k8s",
  "plugins": [
    { "type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": false, "ipMasq": false, "hairpinMode": false,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$POD_SUBNET" }]], "routes": [] } },
    { "type": "tuning", "sysctl": { "net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1" } },
    { "type": "brig-isolate" }
  ]
}
EOF
}

# ---- containerd -----------------------------------------------------------------------------
write_containerd() {
  mkdir -p "$STATE/containerd/root" "$STATE/containerd/state" "$STATE/runc"
  # A pod has no PID field: the kubelet's podPidsLimit bounds a whole pod. brig asks for its
  # lease's cap in the pod annotation brig.dev/pids-max; the CRI passes it into each container's
  # OCI spec (pod_annotations below) and this wrapper of runc writes it into the child
  # container's linux.resources.pids.limit before `runc create`, so runc's own cgroup setup
  # enforces it. Other containers and other commands pass through untouched.
  cat > "$STATE/brig-runc" <<'EOF'
#!/bin/bash
set -euo pipefail
bundle=""; create=0; prev=""
for a in "$@"; do
  case "$prev" in --bundle|-b) bundle="$a" ;; esac
  case "$a" in create) create=1 ;; --bundle=*) bundle="${a#--bundle=}" ;; esac
  prev="$a"
done
if [[ "$create" == 1 && -n "$bundle" && -f "$bundle/config.json" ]]; then
  name="$(jq -r '.annotations["io.kubernetes.cri.container-name"] // ""' "$bundle/config.json")"
  limit="$(jq -r '.annotations["brig.dev/pids-max"] // ""' "$bundle/config.json")"
  if [[ "$name" == child && "$limit" =~ ^[1-9][0-9]{0,6}$ ]]; then
    jq --argjson n "$limit" '.linux.resources.pids.limit = $n' "$bundle/config.json" > "$bundle/config.json.brig"
    mv "$bundle/config.json.brig" "$bundle/config.json"
  fi
fi
exec /usr/sbin/runc "$@"
EOF
  chmod 0755 "$STATE/brig-runc"
  cat > "$STATE/containerd/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.grpc.v1.introspection"]
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The sandbox asks for oom_score_adj -998; root here lacks CAP_SYS_RESOURCE: without the
  # clamp every pod fails with "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["brig.dev/pids-max"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$STATE/runc"
        BinaryName = "$STATE/brig-runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$STATE/cni/bin"
    conf_dir = "$STATE/cni/net.d"
EOF
}

import_images() {
  local ctr=(ctr -a "$CTRD_SOCK" -n k8s.io)
  if ! "${ctr[@]}" images ls -q | grep -qx "$PAUSE_IMAGE"; then
    local ctx; ctx="$(mktemp -d)"
    CGO_ENABLED=0 go build -C "$ROOT/images/k8s-pause" -trimpath -ldflags "-s -w" -o "$ctx/pause" .
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$ctx/Dockerfile"
    docker build -q -t "$PAUSE_IMAGE" "$ctx" >/dev/null
    rm -rf "$ctx"
    docker save "$PAUSE_IMAGE" | "${ctr[@]}" images import - >/dev/null
  fi
  local images=()
  # This checkout's child image (content-hashed; built when missing, kept when present).
  if [[ -f "$ROOT/dist/cli/main.js" ]]; then
    CHILD_IMAGE="$(node "$ROOT/dist/cli/main.js" image build --json | jq -r .tag)"
    images+=("$CHILD_IMAGE")
  else
    say "no dist/ (run \`make build\`): brig's child image is not imported"
  fi
  # shellcheck disable=SC2206
  images+=(${BRIG_K8S_IMAGES:-})
  for img in "${images[@]}"; do
    if ! "${ctr[@]}" images ls -q | grep -qx "docker.io/library/$img\|$img"; then
      say "importing $img into the cluster's containerd"
      docker save "$img" | "${ctr[@]}" images import - >/dev/null
    fi
  done
}

# ---- up -------------------------------------------------------------------------------------
up() {
  need_root
  ensure_packages
  BIN="$("$HERE/k8s-build.sh")"
  local t0=$SECONDS
  mkdir -p "$STATE" "$PIDS" "$LOGS" "$STATE/etcd" "$STATE/kubelet" "$STATE/pod-logs"
  chmod 0700 "$STATE"
  # The network namespaces present before: `down` removes only the ones the CRI made after.
  [[ -f "$STATE/netns-before" ]] || ls /var/run/netns 2>/dev/null > "$STATE/netns-before" || true
  make_pki
  make_bridges
  write_cni
  write_containerd

  start_part etcd etcd --name brig --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "brig=http://127.0.0.1:$((ETCD_PORT + 1))"
  start_part containerd containerd --config "$STATE/containerd/config.toml"
  wait_for etcd 30 "etcd health" curl -sf "http://127.0.0.1:$ETCD_PORT/health"

  start_part kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet.crt" --kubelet-client-key="$PKI/apiserver-kubelet.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range="$SERVICE_RANGE" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction,PodSecurity \
    --anonymous-auth=false --allow-privileged=false --profiling=false --enable-priority-and-fairness=false
  wait_for containerd 30 "the containerd socket" test -S "$CTRD_SOCK"
  wait_for kube-apiserver 90 "an answer on 127.0.0.1:$API_PORT" KUBECTL get --raw /readyz

  start_part kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" --profiling=false
  start_part kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig="$STATE/scheduler.kubeconfig" --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false

  cat > "$STATE/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
containerRuntimeEndpoint: unix://$CTRD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
# The pod spec has no PID field: without this a fork bomb in a pod is unbounded.
podPidsLimit: 512
podLogsDir: $STATE/pod-logs
resolvConf: ""
registerNode: true
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
serializeImagePulls: false
EOF
  start_part kubelet "$BIN/kubelet" --config="$STATE/kubelet-config.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --node-ip="$NODE_IP" --hostname-override="$NODE_NAME"
  import_images
  ready() { [[ "$(KUBECTL get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]; }
  wait_for kubelet 120 "node $NODE_NAME Ready" ready
  if ! KUBECTL get ns brig >/dev/null 2>&1; then KUBECTL create ns brig >/dev/null; fi
  KUBECTL label --overwrite ns brig pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest >/dev/null
  # Pods are refused until the controller-manager made the namespace's default ServiceAccount.
  wait_for kube-controller-manager 60 "the brig namespace's default ServiceAccount" KUBECTL -n brig get serviceaccount default
  # What the tests and brig read: the admin kubeconfig, this kubectl, the imported child image.
  printf 'export KUBECONFIG=%s\nexport BRIG_KUBECTL=%s\nexport BRIG_K8S_CHILD_IMAGE=%s\n' "$ADMIN_KUBECONFIG" "$BIN/kubectl" "${CHILD_IMAGE:-}" > "$STATE/env"
  policy_on
  start_loop_provisioner
  say "ready in $((SECONDS - t0)) s (node $NODE_NAME, API https://127.0.0.1:$API_PORT, namespace brig, logs in $LOGS)"
  echo "export KUBECONFIG=$ADMIN_KUBECONFIG"
}

# ---- NetworkPolicy: kube-router's policy controller ---------------------------------------
# Policy controller only: no routing, no service proxy, no CNI, no health or metrics port.
policy_on() {
  alive kube-router && return 0
  local kr; kr="$("$HERE/k8s-build.sh" kube-router)"
  start_part kube-router "$kr" --kubeconfig="$ADMIN_KUBECONFIG" --hostname-override="$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
    --health-port=0 --metrics-port=0 --service-cluster-ip-range="$SERVICE_RANGE"
  # Its first full sync hooks its chains into the filter table's built-in ones.
  wait_for kube-router 60 "its chains in the filter table" sh -c 'iptables-save -t filter | grep -q "^-A FORWARD .*KUBE-ROUTER-FORWARD"'
}

# kube-router's --cleanup-config leaves its chains and ipsets (and then panics without IPVS):
# its rules are removed here, by the names and comments it gives them, and nothing else.
policy_clean() {
  command -v iptables-save >/dev/null || return 0
  local rule chain set
  iptables-save -t filter | grep -E '^-A (INPUT|FORWARD|OUTPUT) .*kube-router' | sed 's/^-A /-D /' | while read -r rule; do
    eval "iptables -t filter $rule" || true
  done
  local chains; chains="$(iptables-save -t filter | sed -n 's/^:\(KUBE-ROUTER-[^ ]*\|KUBE-POD-FW-[^ ]*\|KUBE-NWPLCY-[^ ]*\) .*/\1/p')"
  for chain in $chains; do iptables -t filter -F "$chain" || true; done
  for chain in $chains; do iptables -t filter -X "$chain" || true; done
  if command -v ipset >/dev/null; then
    for set in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router)' || true); do ipset destroy "$set" 2>/dev/null || true; done
  fi
}

policy_off() {
  if [[ -f "$PIDS/kube-router.pid" ]]; then stop_pid "$(cat "$PIDS/kube-router.pid")" kube-router; fi
  rm -f "$PIDS/kube-router.pid"
  policy_clean
}

policy() {
  need_root
  case "${1:-}" in
    on) BIN="$("$HERE/k8s-build.sh")"; policy_on; say "NetworkPolicy enforced (kube-router)" ;;
    off) policy_off; say "NetworkPolicy not enforced: kube-router stopped, its rules and ipsets removed" ;;
    *) say "usage: scripts/k8s-up.sh policy on|off"; exit 2 ;;
  esac
}

open_namespace() {
  local ns="${1:-}"
  [[ "$ns" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || { say "usage: scripts/k8s-up.sh open NAMESPACE (a namespace name)"; exit 2; }
  [[ "$ns" != brig ]] || { say "brig's own namespace keeps isolated ports"; exit 2; }
  [[ -d "$STATE/cni" ]] || { say "no cluster here: scripts/k8s-up.sh up first"; exit 1; }
  grep -qx "$ns" "$STATE/cni/open-namespaces" 2>/dev/null || echo "$ns" >> "$STATE/cni/open-namespaces"
  say "pods of $ns made from now on keep pod-to-pod traffic over the bridge (NetworkPolicy alone holds it)"
}

# ---- storage: the brig-loop class ------------------------------------------------------------
start_loop_provisioner() {
  alive loop-provisioner && return 0
  [[ -x "$ROOT/node_modules/.bin/tsx" ]] || fail_part loop-provisioner "node_modules is missing (make deps)"
  ( cd "$ROOT" && start_part loop-provisioner node --import tsx scripts/k8s-loop-provisioner.ts \
      --server "https://127.0.0.1:$API_PORT" --ca "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
      --dir "$STATE/loop-pv" --node "$NODE_NAME" )
  KUBECTL apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: brig-loop, labels: {app.kubernetes.io/managed-by: brig-k8s-up}}
provisioner: brig.dev/loop
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
  wait_for loop-provisioner 30 "its first pass" grep -q "brig-loop provisioner" "$LOGS/loop-provisioner.log"
}

# ---- down -----------------------------------------------------------------------------------
stop_pid() { # pid name
  local pid="$1" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 75); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  say "$2 (pid $pid) did not end on SIGTERM in 15 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  need_root
  [[ -d "$STATE" ]] || { say "nothing to end: $STATE does not exist"; return 0; }
  # The kubelet first (it would restart what the rest stops), the control plane, then the pods'
  # shims (children of this containerd: their command line names its socket), containerd, etcd.
  policy_off
  local name
  for name in loop-provisioner kubelet kube-scheduler kube-controller-manager kube-apiserver; do
    [[ -f "$PIDS/$name.pid" ]] && stop_pid "$(cat "$PIDS/$name.pid")" "$name"
    rm -f "$PIDS/$name.pid"
  done
  local shim
  for shim in $(pgrep -f "containerd-shim.*-address $CTRD_SOCK" || true); do stop_pid "$shim" containerd-shim; done
  for name in containerd etcd; do
    [[ -f "$PIDS/$name.pid" ]] && stop_pid "$(cat "$PIDS/$name.pid")" "$name"
    rm -f "$PIDS/$name.pid"
  done
  # What runc and the shims left running: processes whose cgroup is a kubelet pod's.
  local p
  for p in $(grep -l 'kubepods' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 || true); do kill -KILL "$p" 2>/dev/null || true; done
  # Mounts under the state dir (the kubelet's volumes, the snapshotter's, the netns), deepest first.
  local m
  for m in $(awk -v s="$STATE" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  # The network namespaces the CRI made.
  if [[ -d /var/run/netns ]]; then
    for m in $(ls /var/run/netns); do
      if ! grep -qx "$m" "$STATE/netns-before" 2>/dev/null && [[ "$m" == cni-* ]]; then
        umount "/var/run/netns/$m" 2>/dev/null || true
        rm -f "/var/run/netns/$m"
      fi
    done
  fi
  for m in $(awk '$2 ~ "^/run/containerd/io.containerd|^/var/lib/kubelet" { print $2 }' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  ip link del "$POD_BRIDGE" 2>/dev/null || true
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  local h
  for h in "${HOST_PATHS[@]}"; do rm -rf "$h"; done
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null || true
  rm -rf "$STATE"
  say "ended; removed $STATE and the host paths the kubelet and the CRI write"
}

status() {
  local name rc=0
  for name in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-router loop-provisioner; do
    if alive "$name"; then echo "$name running (pid $(cat "$PIDS/$name.pid"))"; else echo "$name not running"; rc=1; fi
  done
  return $rc
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  status) status ;;
  policy) policy "${2:-}" ;;
  open) open_namespace "${2:-}" ;;
  *) say "usage: scripts/k8s-up.sh up|down|status|policy on|off|open NAMESPACE"; exit 2 ;;
esac
