--- kinformer.cmd.cli: the `kinformer` command (bin/kinformer).
--
--   kinformer run script.lua [--kubeconfig F] [--context C] [--namespace N]
--                            [--sim [--seed FILE]] [--sync-timeout S]
--                            [--shutdown-timeout S] [--leader-elect
--                            [--leader-election-id NAME]
--                            [--leader-election-namespace NS]
--                            [--leader-elect-lease-duration S]
--                            [--leader-elect-renew-deadline S]
--                            [--leader-elect-retry-period S]]
--                            [--shards auto|I/N]
--                            [--metrics-bind-address ADDR]
--                            [--metrics-secure [--metrics-cert-path DIR]
--                            [--metrics-cert-name F] [--metrics-cert-key F]]
--                            [--health-probe-bind-address ADDR]
--                            [--webhook-bind-address ADDR]
--                            [--webhook-cert-path DIR [--webhook-cert-name F]
--                            [--webhook-cert-key F]]
--                            [--admin-bind-address ADDR]
--                            [--content-type auto|json|protobuf] [-v] [-- ARGS...]
--   kinformer inspect [--address HOST:PORT] [caches|queues|inflight|why KEY
--                     [--controller NAME]]   (kinformer.cmd.inspect)
--   kinformer manifests script.lua [--namespace N] [--image I] [--name N]
--                                  [--allow-undetermined] [--cert-manager]
--   kinformer plan script.lua [--key ns/name]... [--kubeconfig F] [--context C]
--                             [--namespace N] [--sim [--seed FILE]]
--                             [--sync-timeout S] [-v|-q] [-- ARGS...]
--   kinformer repl [script.lua] [run's connection options]  (kinformer.cmd.repl)
--   kinformer --help | --version
--
-- `plan` (kinformer.plan) shows what the script's controllers would change,
-- sending every write as a server-side dry run: exit 0 nothing would
-- change, 2 something would, 1 an error.
--
-- Each command is a module of this folder (kinformer.cmd.run, .plan,
-- .repl, .manifests, .record, .replay, .inspect); every one that runs an
-- operator script loads it with kinformer.bootstrap.
local M = {}

M.usage = [==[
usage: kinformer run SCRIPT [options] [-- ARGS...]
       kinformer manifests SCRIPT [--namespace NS] [--image IMAGE] [--name NAME] [--allow-undetermined]
                           [--cert-manager]
                           [--observe [--seed FILE] [--drive LUA | --trace TRACE] [--duration S]]
       kinformer plan SCRIPT [--key NS/NAME]... [connection options] [-- ARGS...]
       kinformer record -o TRACE [--duration S] [connection options] RESOURCE...
       kinformer replay TRACE SCRIPT [--compare NEW_SCRIPT] [--fault N:KIND]...
       kinformer types [connection options] (RESOURCE... | --all)
       kinformer inspect [--address HOST:PORT] [caches | queues | inflight | why KEY] [--controller NAME]
       kinformer repl [SCRIPT] [options]
       kinformer --help | --version

Runs SCRIPT (a Lua file) as an operator. SCRIPT is called with the manager
and an options table (local mgr, opts = ...), registers informers, handlers
and controllers, and may return a function called after shutdown, or a table
{on_start = fn, on_stop = fn} (on_start runs once the caches synced). kinformer then starts the manager, waits for the caches to
sync and runs until SIGINT or SIGTERM.

options:
  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, ~/.kube/config)
  --context NAME      kubeconfig context (default: its current-context)
  --namespace NS      default namespace of namespaced informers (mgr.namespace)
  --name NAME         the operator's name (kinformer.manager{name=}; default:
                      SCRIPT's folder for operator.lua, else its file name,
                      followed by the controllers' names): the default Lease
  --sim               run an in-process kinformer.sim and use it (no cluster needed)
  --seed FILE         with --sim: objects to load first (JSON array, List, or one per line)
  --sync-timeout S    seconds to wait for the caches to sync (default 120)
  --max-response-bytes N  largest body of an answer that is not a watch
                      (kinformer.manager{max_response_bytes=}; default 256 MiB)
  --shutdown-timeout S  on SIGINT/SIGTERM, seconds in-flight reconciles get
                      before they are interrupted (default 30); a second
                      signal exits at once
  --metrics-bind-address ADDR  serve Prometheus metrics at ADDR/metrics
                      ("host:port" or ":port"; default 0: off)
  --metrics-secure    serve /metrics over HTTPS behind TokenReview and
                      SubjectAccessReview (get on /metrics), as
                      controller-runtime's scaffold (docs/security.md)
  --metrics-cert-path DIR  the folder of the metrics key pair, reloaded
                      when it rotates (default: self-signed at start)
  --metrics-cert-name F  its certificate file (default tls.crt)
  --metrics-cert-key F   its key file (default tls.key)
  --health-probe-bind-address ADDR  serve /healthz and /readyz at ADDR
                      (default 0: off)
  --webhook-bind-address ADDR  serve the script's webhooks (mgr:webhook) over
                      HTTPS at ADDR (default :9443; 0: no server; with --sim
                      the sim calls them in process unless this is given)
  --webhook-cert-path DIR  the folder of the webhook server's key pair
                      (cert-manager's Secret mounted), reloaded when it
                      rotates (default: a CA and serving certificate made
                      at start, the CA patched into the webhook
                      configurations)
  --webhook-cert-name F  its certificate file (default tls.crt)
  --webhook-cert-key F   its key file (default tls.key)
  --content-type auto|json|protobuf  the encoding informers ask for (default
                      auto: protobuf for built-in types, JSON for custom
                      resources, as client-go; json: JSON only)
  --admin-bind-address ADDR  serve the admin endpoint `kinformer inspect`
                      reads (caches, queues, in-flight reconciles, why) at
                      ADDR (default 0: off); ":PORT" binds 127.0.0.1 and
                      checks Host; any other host serves HTTPS behind
                      TokenReview and SubjectAccessReview
  --leader-elect      run controllers only while this replica holds the
                      Lease (others stay warm: informers synced); losing
                      it exits with status 1
  --leader-election-id NAME  the Lease's name (default: the operator's
                      name, --name)
  --leader-election-namespace NS  the Lease's namespace (default: the
                      manager's namespace)
  --leader-elect-lease-duration S, --leader-elect-renew-deadline S,
  --leader-elect-retry-period S  the election's timing in seconds
                      (defaults 15, 10, 2; as kube-controller-manager)
  --disable-compression  do not ask the API server for gzip (kubectl's
                      flag; by default large LIST pages come compressed,
                      as client-go asks)
  --kube-api-qps Q, --kube-api-burst B  the client's rate limit (default
                      50 requests per second, bursts of 100)
  --shards auto|I/N   shard the controllers across replicas (run): auto
                      on Leases (each replica a member Lease, keys moved
                      with no overlap; see README "Running sharded"), or
                      fixed shard I of N (0-based, e.g. a StatefulSet
                      ordinal); manifests --shards N prints N replicas
  --watch             reload the controllers whose code changed when SCRIPT,
                      their reconciler modules or another Lua file in
                      their folders changes (a file that fails to load is
                      logged with file:line and the old code keeps running)
  -v, --verbose       debug logging and one line per reconcile
  -q, --quiet         warnings and errors only
  -h, --help          this text
  --version           the version

repl: runs SCRIPT (optional) as run does, starts the manager in the
background and reads Lua at a prompt: values pretty-print, help() and
help(x) list what things offer, Tab completes, Ctrl-C interrupts the
running statement, Ctrl-D leaves. Takes run's connection options.

manifests: prints the ServiceAccount, RBAC (ClusterRole, or Role with
--namespace), ConfigMap and Deployment that run SCRIPT in a cluster (see
docs/deploy.md); the script runs in a planning mode, no server is used.
  --image IMAGE       the Deployment's image (default kinformer-operator:latest)
  --name NAME         the objects' name (default: the script's folder or file name)
  --allow-undetermined  print the YAML even when a client call's resource could
                      not be determined and no declared rbac rule covers it
                      (it is granted nothing; stderr still lists it). Without
                      it such a call fails the command: exit 1, no YAML
  --cert-manager      webhooks (mgr:webhook): their certificate from
                      cert-manager (an Issuer, a Certificate, its Secret
                      mounted for --webhook-cert-path, the CA injected with
                      cert-manager.io/inject-ca-from) instead of the CA the
                      operator makes and patches in at start
  --observe           instead: run SCRIPT against an in-process kinformer.sim
                      as its own user and print the rules its requests needed
                      beside the derived ones (= used, + used but not derived,
                      - derived but not used); exit 1 when a + is printed.
                      With --seed FILE, --drive LUA (a script that makes the
                      changes the operator reacts to) or --trace TRACE (a
                      recorded trace, replayed), --duration S (default 1)

plan: loads SCRIPT as run does, syncs the caches without starting the
controllers, runs each controller's reconciler once per key with every write
sent as a server-side dry run (dryRun=All: nothing is stored) and prints, per
key, a unified diff of each object it would create, update or delete. Takes
--kubeconfig, --context, --namespace, --sim, --seed, --sync-timeout, -v, -q.
  --key NS/NAME       plan this key (repeatable; "NAME" when cluster-scoped;
                      default: every key of each controller's For informer)
  exit status: 0 nothing would change, 2 something would, 1 an error (the
  script, the connection or the sync failed, or a reconcile failed)

replay: feeds TRACE (from `kinformer record`) through SCRIPT against an
in-process kinformer.sim, the recorded objects with their recorded uids,
creationTimestamps and resourceVersions, and prints the writes SCRIPT made
(JSON). --compare NEW_SCRIPT: shadow reconcile before an upgrade: replays
TRACE through SCRIPT and through NEW_SCRIPT (each on its own sim, the same
fake clock) and prints a unified diff of their writes per object; exit 0
the same writes, 2 they differ, 1 an error. `kinformer replay --help`
tells more.

types: prints LuaCATS classes (k8s.apps.v1.Deployment, ...) of each RESOURCE's
objects and the schemas they reference, from the server's OpenAPI v3
documents, for editors; --all: every schema. Takes --kubeconfig, --context,
--sim, --seed; `kinformer types --help` tells more.
]==]

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

-- The options that take one value, stored as given, and the field of
-- M.parse's table each sets.
local VALUE_FLAGS = {
  ["--kubeconfig"] = "kubeconfig", ["--context"] = "context", ["--namespace"] = "namespace",
  ["-n"] = "namespace", ["--seed"] = "seed", ["--image"] = "image", ["--name"] = "name",
  ["--drive"] = "drive", ["--trace"] = "trace", ["--metrics-bind-address"] = "metrics_bind",
  ["--metrics-cert-path"] = "metrics_cert_path", ["--metrics-cert-name"] = "metrics_cert_name",
  ["--metrics-cert-key"] = "metrics_cert_key", ["--health-probe-bind-address"] = "health_bind",
  ["--webhook-bind-address"] = "webhook_bind_address", ["--webhook-cert-path"] = "webhook_cert_path",
  ["--webhook-cert-name"] = "webhook_cert_name", ["--webhook-cert-key"] = "webhook_cert_key",
  ["--admin-bind-address"] = "admin_bind", ["--leader-election-id"] = "leader_election_id",
  ["--leader-election-namespace"] = "leader_election_namespace", ["--content-type"] = "content_type",
  ["--shards"] = "shards",
}

-- The options that take no value, and the field each sets to true.
local SWITCHES = {
  ["--sim"] = "sim", ["--observe"] = "observe", ["--allow-undetermined"] = "allow_undetermined",
  ["--cert-manager"] = "cert_manager", ["--metrics-secure"] = "metrics_secure",
  ["--leader-elect"] = "leader_elect", ["--watch"] = "watch", ["-v"] = "verbose", ["--verbose"] = "verbose",
  ["-q"] = "quiet", ["--quiet"] = "quiet", ["--disable-compression"] = "disable_compression",
}

--- Parses argv (an array of strings, as `arg`). Returns a table
-- {command = "run"|"repl"|"manifests"|"plan"|"help"|"version", script =, keys =
-- (plan's --key values), image =, name =, allow_undetermined = (manifests'),
-- kubeconfig =, context =,
-- namespace =, sim =, seed =, verbose =, quiet =, sync_timeout =,
-- shutdown_timeout =, metrics_bind =, health_bind =, webhook_bind_address =,
-- webhook_cert_path =, webhook_cert_name =, webhook_cert_key =, leader_elect =,
-- leader_election_id =, leader_election_namespace =, lease_duration =,
-- renew_deadline =, retry_period =, args = {}}
-- or nil, message (a usage error).
function M.parse(argv)
  local o = { args = {} }
  local i, n = 1, #argv
  local function value(flag)
    local v = argv[i + 1]
    if v == nil then error({ usage = flag .. " needs a value" }) end
    i = i + 1
    return v
  end
  local ok, err = pcall(function()
    while i <= n do
      local a = argv[i]
      local flag, inline = a:match("^(%-%-[%w-]+)=(.*)$")
      if flag then
        a = flag
        table.insert(argv, i + 1, inline)
        n = n + 1
      end
      if a == "--" then
        for j = i + 1, n do o.args[#o.args + 1] = argv[j] end
        break
      elseif a == "-h" or a == "--help" or a == "help" then
        o.command = "help"
      elseif a == "--version" or a == "version" then
        o.command = o.command or "version"
      elseif VALUE_FLAGS[a] then
        o[VALUE_FLAGS[a]] = value(a)
      elseif SWITCHES[a] then
        o[SWITCHES[a]] = true
      elseif a == "--duration" then
        local v = value(a)
        o.duration = tonumber(v)
        if not o.duration or o.duration < 0 then
          error({ usage = "--duration must be a number of seconds >= 0, not " .. v })
        end
      elseif a == "--key" then
        o.keys = o.keys or {}
        o.keys[#o.keys + 1] = value(a)
      elseif a == "--sync-timeout" then
        local v = value(a)
        o.sync_timeout = tonumber(v)
        if not o.sync_timeout or o.sync_timeout <= 0 then
          error({ usage = "--sync-timeout must be a positive number of seconds, not " .. v })
        end
      elseif a == "--max-response-bytes" then
        local v = value(a)
        o.max_response_bytes = math.tointeger(tonumber(v))
        if not o.max_response_bytes or o.max_response_bytes <= 0 then
          error({ usage = "--max-response-bytes must be a positive number of bytes, not " .. v })
        end
      elseif a == "--kube-api-qps" or a == "--kube-api-burst" then
        -- kube-controller-manager's names for the client's rate limit
        local v = value(a)
        local k = a == "--kube-api-qps" and "qps" or "burst"
        o[k] = tonumber(v)
        if not o[k] or o[k] <= 0 then
          error({ usage = a .. " must be a positive number, not " .. v })
        end
      elseif a == "--shutdown-timeout" then
        local v = value(a)
        o.shutdown_timeout = tonumber(v)
        if not o.shutdown_timeout or o.shutdown_timeout < 0 then
          error({ usage = "--shutdown-timeout must be a number of seconds >= 0, not " .. v })
        end
      elseif a == "--leader-elect-lease-duration" or a == "--leader-elect-renew-deadline"
          or a == "--leader-elect-retry-period" then
        local v = value(a)
        local k = a:match("^%-%-leader%-elect%-(.*)$"):gsub("%-", "_")
        o[k] = tonumber(v)
        if not o[k] or o[k] <= 0 then
          error({ usage = a .. " must be a positive number of seconds, not " .. v })
        end
      elseif a:sub(1, 1) == "-" then
        error({ usage = "unknown option " .. a })
      elseif o.command == nil and a == "run" then
        o.command = "run"
      elseif o.command == nil and a == "manifests" then
        o.command = "manifests"
      elseif o.command == nil and a == "plan" then
        o.command = "plan"
      elseif o.command == nil and a == "repl" then
        o.command = "repl"
      elseif (o.command == "run" or o.command == "manifests" or o.command == "plan" or o.command == "repl")
          and o.script == nil then
        o.script = a
      else
        error({ usage = "unexpected argument " .. a })
      end
      i = i + 1
    end
  end)
  if not ok then
    if type(err) == "table" and err.usage then return nil, err.usage end
    error(err, 0)
  end
  if o.command == nil then return nil, "no command (try: kinformer run script.lua)" end
  if o.command == "manifests" then
    if not o.script then return nil, "manifests needs a script" end
    if o.sim then return nil, "manifests takes no --sim (--observe runs a kinformer.sim itself)" end
    if (o.seed or o.drive or o.trace or o.duration) and not o.observe then
      return nil, "--seed, --drive, --trace and --duration are options of manifests --observe"
    end
    if o.drive and o.trace then return nil, "--observe takes --drive or --trace, not both" end
  elseif o.image then
    return nil, "--image is an option of manifests"
  elseif o.observe or o.drive or o.trace or o.duration then
    return nil, "--observe, --drive, --trace and --duration are options of manifests"
  elseif o.allow_undetermined then
    return nil, "--allow-undetermined is an option of manifests"
  elseif o.cert_manager then
    return nil, "--cert-manager is an option of manifests"
  end
  if o.name ~= nil and o.command ~= "manifests" then -- manifests makes a name of it
    local good, why = pcall(require("kinformer.manager").check_name, o.name, "--name")
    if not good then return nil, (tostring(why):gsub("^[^:]*:%d+: ", "")) end
  end
  if o.keys and o.command ~= "plan" then return nil, "--key is an option of plan" end
  if o.content_type and not ({ auto = 1, json = 1, protobuf = 1 })[o.content_type] then
    return nil, "--content-type wants auto, json or protobuf, not '" .. o.content_type .. "'"
  end
  if o.webhook_bind_address or o.webhook_cert_path or o.webhook_cert_name or o.webhook_cert_key then
    if o.command ~= "run" then return nil, "--webhook-* options are options of run" end
    if (o.webhook_cert_name or o.webhook_cert_key) and not o.webhook_cert_path then
      return nil, "--webhook-cert-name and --webhook-cert-key need --webhook-cert-path (the folder they are in)"
    end
  end
  if o.shards then
    if o.command == "manifests" then
      local count = tonumber(o.shards)
      if not count or count ~= math.floor(count) or count < 1 then
        return nil, "manifests --shards wants a number of replicas, not '" .. o.shards .. "'"
      end
    elseif o.command ~= "run" then
      return nil, "--shards is an option of run and manifests"
    elseif o.shards ~= "auto" then
      local si, sn = o.shards:match("^(%d+)/(%d+)$")
      if not si or tonumber(si) >= tonumber(sn) then
        return nil, "--shards wants auto or I/N (shard I of N, 0 <= I < N), not '" .. o.shards .. "'"
      end
    end
    if o.command == "run" and o.leader_elect then
      return nil, "--shards and --leader-elect do not mix: sharded replicas elect through Leases themselves"
    end
  end
  if o.command == "plan" then
    if not o.script then return nil, "plan needs a script" end
    if o.leader_elect or o.metrics_bind or o.health_bind or o.shutdown_timeout then
      return nil, "plan takes no --leader-elect, --metrics-bind-address, --health-probe-bind-address "
        .. "or --shutdown-timeout"
    end
    for _, k in ipairs(o.keys or {}) do
      if k == "" or k:match("^/") or k:match("/$") or select(2, k:gsub("/", "")) > 1 then
        return nil, "--key wants NAMESPACE/NAME or NAME, not '" .. k .. "'"
      end
    end
  end
  if o.command == "run" or o.command == "plan" or o.command == "repl" then
    if not o.script and o.command ~= "repl" then return nil, "run needs a script" end
    if o.command == "repl" and o.leader_elect then return nil, "repl takes no --leader-elect" end
    if o.seed and not o.sim then return nil, "--seed needs --sim" end
    if (o.leader_election_id or o.leader_election_namespace or o.lease_duration
        or o.renew_deadline or o.retry_period) and not o.leader_elect
        and not (o.shards == "auto" and not o.leader_election_id) then
      return nil, "--leader-election-* and --leader-elect-* options need --leader-elect "
        .. "(or --shards auto, which takes all but --leader-election-id)"
    end
    if o.sim and (o.kubeconfig or o.context) then
      return nil, "--sim cannot be combined with --kubeconfig or --context"
    end
  elseif o.watch then
    return nil, "--watch is an option of run"
  end
  return o
end

--- Entry point: argv as `arg`. Returns the exit status.
function M.main(argv)
  -- record and replay parse their own arguments (kinformer.cmd.record, kinformer.cmd.replay)
  if argv and (argv[1] == "record" or argv[1] == "replay") then
    return require("kinformer.cmd." .. argv[1]).main(argv)
  end
  if argv and argv[1] == "types" then return require("kinformer.cmd.types").main(argv) end
  if argv and argv[1] == "inspect" then
    return require("kinformer.cmd.inspect").main({ table.unpack(argv, 2) })
  end
  local o, err = M.parse(argv or {})
  if not o then
    stderr("kinformer: %s\n%s", err, M.usage)
    return 2
  end
  if o.command == "help" then
    io.stdout:write(M.usage)
    return 0
  end
  if o.command == "version" then
    local ok, kinformer = pcall(require, "kinformer")
    io.stdout:write((ok and kinformer._VERSION or "kinformer (core module not found)") .. "\n")
    return ok and 0 or 1
  end
  if o.command == "manifests" then
    if o.observe then return require("kinformer.cmd.observe").main(o) end
    return require("kinformer.cmd.manifests").main(o)
  end
  if o.command == "plan" then return require("kinformer.cmd.plan").main(o) end
  if o.command == "repl" then return require("kinformer.cmd.repl").main(o) end
  return require("kinformer.cmd.run").run(o)
end

return M
