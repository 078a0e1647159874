#!/usr/bin/env python3
"""The Kubernetes manifests in deploy/kubernetes parse, and agree with each other and
with llmserve: ports, selectors and probes line up, the grace period covers the
shutdown settings, the autoscaler scales the Deployment on a metric the adapter rule
makes from one llmserve serves, llmserve accepts the engine configuration, and the
tensor-parallel LeaderWorkerSet group starts as many ranks as it has pods.

  tests/manifests_test.py LLMSERVE_BINARY
"""
import glob
import os
import subprocess
import sys
import tempfile
import tomllib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def check_tensor_parallel_group(docs, binary):
    """The LeaderWorkerSet of tensor-parallel.yaml: rank 0 is the leader and the Service's
    target, mpirun starts as many ranks as the group has pods, the ssh port agrees on both
    sides, the scripts parse and the hostfile names every pod of the group, rank 0 first."""
    want = {("ConfigMap", "llmserve-tp-config"), ("LeaderWorkerSet", "llmserve-tp"), ("Service", "llmserve-tp")}
    check(want <= set(docs), f"missing tensor-parallel manifests: {want - set(docs)}")
    if not want <= set(docs):
        return
    data = docs[("ConfigMap", "llmserve-tp-config")]["data"]
    config = tomllib.loads(data["llmserve.toml"])
    lws = docs[("LeaderWorkerSet", "llmserve-tp")]["spec"]["leaderWorkerTemplate"]
    size = lws["size"]
    check(size >= 2, "a tensor-parallel group needs at least 2 pods")
    check(lws.get("restartPolicy") == "RecreateGroupOnPodRestart",
          "a lost rank must recreate the whole group: its ranks only start together")
    leader, worker = lws["leaderTemplate"], lws["workerTemplate"]
    lc, wc = leader["spec"]["containers"][0], worker["spec"]["containers"][0]
    check(lc["readinessProbe"]["httpGet"]["path"] == "/ready", "leader readiness is not /ready")
    check(lc["livenessProbe"]["httpGet"]["path"] == "/health", "leader liveness is not /health")
    check({p["name"]: p["containerPort"] for p in lc["ports"]}.get("http") == config["port"], "leader port")
    check(lc["command"] == ["bash", "/etc/llmserve/leader.sh"], "the leader does not run leader.sh")
    check(wc["command"] == ["bash", "/etc/llmserve/worker.sh"], "the worker does not run worker.sh")
    svc = docs[("Service", "llmserve-tp")]["spec"]
    check(svc["selector"].items() <= leader["metadata"]["labels"].items(), "the Service misses the leaders")
    check(not svc["selector"].items() <= worker["metadata"]["labels"].items(), "the Service selects workers")
    check(svc["ports"][0]["targetPort"] == config["port"], "the Service's targetPort is not the server's port")
    for template in (leader, worker):
        mounts = {m["mountPath"] for m in template["spec"]["containers"][0]["volumeMounts"]}
        check({"/etc/llmserve", "/etc/llmserve-ssh", os.path.dirname(config["model"])} <= mounts,
              f"{template['metadata']['labels']['role']}: config, ssh key or model not mounted")
    leader_sh, worker_sh = data["leader.sh"], data["worker.sh"]
    for name in ("hostfile.sh", "leader.sh", "worker.sh"):
        r = subprocess.run(["bash", "-n"], input=data[name], capture_output=True, text=True)
        check(r.returncode == 0, f"{name} does not parse: {r.stderr.strip()}")
    check('-np "$LWS_GROUP_SIZE"' in leader_sh and '--tensor-parallel "$LWS_GROUP_SIZE"' in leader_sh,
          "mpirun's rank count and --tensor-parallel must both be the group's size")
    check("orte_abort_on_non_zero_status 0" in leader_sh, "without it mpirun kills rank 0 before it answers 503")
    ssh_port = int(leader_sh.split('ssh_args="-p ')[1].split()[0])
    check(f"-p {ssh_port} " in worker_sh, f"workers' sshd is not on the leader's ssh port {ssh_port}")
    check({p["name"]: p["containerPort"] for p in wc["ports"]}.get("ssh") == ssh_port, "worker ssh port")
    # The hostfile LWS's names give: the leader, then workers 1..size-1 in its subdomain.
    env = dict(os.environ, LWS_LEADER_ADDRESS="llmserve-tp-3.llmserve-tp.serving", LWS_GROUP_SIZE="3")
    r = subprocess.run(["bash", "-c", data["hostfile.sh"]], env=env, capture_output=True, text=True)
    check(r.stdout.splitlines() == ["llmserve-tp-3.llmserve-tp.serving slots=1",
                                    "llmserve-tp-3-1.llmserve-tp.serving slots=1",
                                    "llmserve-tp-3-2.llmserve-tp.serving slots=1"], f"hostfile: {r.stdout!r} {r.stderr}")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(data["llmserve.toml"])
    r = subprocess.run([binary, "serve", "--config", f.name, "--print-config"], capture_output=True, text=True)
    os.unlink(f.name)
    check(r.returncode == 0, f"llmserve refuses the tensor-parallel configuration: {r.stderr.strip()}")


def main():
    binary = sys.argv[1]
    docs = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "deploy/kubernetes/*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                name = os.path.basename(path)
                check(isinstance(doc, dict), f"{name}: a document is not a mapping")
                for key in ("apiVersion", "kind", "metadata"):
                    check(key in doc, f"{name}: no {key}")
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    want = {("ConfigMap", "llmserve-config"), ("Deployment", "llmserve"), ("Service", "llmserve"),
            ("InferencePool", "llmserve-pool"), ("InferenceObjective", "llmserve-interactive"),
            ("HorizontalPodAutoscaler", "llmserve"), ("ConfigMap", "llmserve-adapter-rules")}
    check(want <= set(docs), f"missing manifests: {want - set(docs)}")

    config_text = docs[("ConfigMap", "llmserve-config")]["data"]["llmserve.toml"]
    config = tomllib.loads(config_text)
    dep = docs[("Deployment", "llmserve")]
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(), "Deployment selector misses its pods")
    container = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(ports.get("http") == config["port"], f"container port {ports} is not the config's {config['port']}")
    check(container["livenessProbe"]["httpGet"]["path"] == "/health", "liveness probe is not /health")
    check(container["readinessProbe"]["httpGet"]["path"] == "/ready", "readiness probe is not /ready")
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    ready = container["readinessProbe"]
    # One busy moment (a full queue) must not take a pod out of rotation ...
    check(ready.get("failureThreshold", 3) >= 2, "readiness failureThreshold 1: a full-queue moment takes the pod out")
    # ... and a draining pod must be out before its listener closes.
    check(ready.get("periodSeconds", 10) * ready.get("failureThreshold", 3) <= pre_stop + config["shutdown_delay"],
          "readiness takes longer to fail than preStop + shutdown_delay")
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    check(grace >= pre_stop + config["shutdown_delay"] + config["shutdown_timeout"],
          f"grace period {grace} s is shorter than preStop + shutdown_delay + shutdown_timeout")
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    check(os.path.dirname(config["model"]) in mounts, "the model's folder is not mounted")
    check("/etc/llmserve" in mounts and "/etc/llmserve/llmserve.toml" in container["args"], "config not mounted")

    svc = docs[("Service", "llmserve")]
    check(svc["spec"]["selector"].items() <= labels.items(), "Service selector misses the pods")
    check(svc["spec"]["ports"][0]["targetPort"] == config["port"], "Service targetPort is not the server's port")
    pool = docs[("InferencePool", "llmserve-pool")]
    check(pool["spec"]["selector"]["matchLabels"].items() <= labels.items(), "InferencePool selector misses the pods")
    check([p["number"] for p in pool["spec"]["targetPorts"]] == [config["port"]], "InferencePool port")
    check(docs[("InferenceObjective", "llmserve-interactive")]["spec"]["poolRef"]["name"] == "llmserve-pool",
          "InferenceObjective names another pool")
    check(config.get("metrics_compat") == "vllm", "the picker reads vLLM's names: metrics_compat must be vllm")

    hpa = docs[("HorizontalPodAutoscaler", "llmserve")]
    check(hpa["spec"]["scaleTargetRef"]["name"] == "llmserve" and hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment",
          "HPA scales something else")
    rules = yaml.safe_load(docs[("ConfigMap", "llmserve-adapter-rules")]["data"]["config.yaml"])["rules"]
    rule = rules[0]
    series = rule["seriesQuery"].split("{")[0].strip("'")
    exposed = series.replace("vllm:", "vllm_") if rule["name"]["as"] == "vllm_${1}" else None
    check(hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == exposed, "HPA metric is not what the adapter exposes")

    # llmserve accepts the configuration, and serves the series the adapter queries.
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(config_text)
    r = subprocess.run([binary, "serve", "--config", f.name, "--print-config"], capture_output=True, text=True)
    os.unlink(f.name)
    check(r.returncode == 0, f"llmserve refuses the configuration: {r.stderr.strip()}")
    check(f'shutdown_delay = {config["shutdown_delay"]}' in r.stdout, "the configuration's shutdown_delay is not taken")
    metrics_doc = open(os.path.join(ROOT, "docs/metrics.md")).read()
    check(f"`{series}`" in metrics_doc, f"{series} is not among the metrics llmserve documents")

    check_tensor_parallel_group(docs, binary)

    for f in failures:
        print("FAIL:", f)
    print(f"{len(docs)} manifests, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
