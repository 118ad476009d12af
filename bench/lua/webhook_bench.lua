--- make bench-webhook, kinformer's side: the Website example's webhooks
-- (examples/website/operator.lua: validate and convert, loaded on a manager
-- without its controller) on a manager of an in-process kinformer.sim
-- seeded with examples/website/seed.json.
--
--   lua5.4 bench/lua/webhook_bench.lua --mode serve --bind 127.0.0.1:P
--          --cert-dir D --ready-file F [--timeout S]
--     serves the hooks over HTTPS on --bind with D/tls.crt and D/tls.key
--     (webhook_cert_path, webhook_configure = false); once started, writes
--     the validating hook's path to F and serves until killed or --timeout
--     seconds pass.
--   lua5.4 bench/lua/webhook_bench.lua --mode sim --creates N [--timeout S]
--     admission through the sim's in-process chain: N Website creates by
--     one client (the manager's REST client, no rate limit, over loopback
--     HTTP to the sim) before the manager starts (no webhook: the
--     baseline), then N more with the manager's webhooks registered in the
--     sim (each create calls the validating hook in process); each phase
--     after unmeasured warm-up creates. Prints one JSON line:
--     creates/s of both and the hook's share of a create.
local common = require "bench.lua.common"
local kinformer = require "kinformer"
local ksim = require "kinformer.sim"

local a = common.args(arg, { mode = "sim", creates = "2000", timeout = "120" })
local timeout = tonumber(a.timeout)
local r = { client = "kinformer-lua", version = kinformer._VERSION, mode = a.mode }

local function fail(msg)
  r.error = tostring(msg)
  common.emit(r)
  os.exit(1)
end

local sim, serr = ksim.start { seed = "examples/website/seed.json" }
if not sim then fail(serr) end
-- no client-side rate limit (the default qps would be the bottleneck)
local opts = { sim = sim, log_level = "warn", qps = 1e6, burst = 1000000 }
if a.mode == "serve" then
  opts.webhook_bind_address = assert(a.bind, "--bind ADDR required")
  opts.webhook_cert_path = assert(a.cert_dir, "--cert-dir D required")
  opts.webhook_configure = false
elseif a.mode ~= "sim" then
  fail("--mode serve|sim")
end
local mgr, merr = kinformer.manager(opts)
if not mgr then fail(merr) end

-- The example's hooks only: its controller is left out (a proxy manager
-- whose controller() does nothing), so the measurement is the webhook's.
local hooks = {}
local proxy = {
  env = mgr.env,
  controller = function() return true end,
  webhook = function(_, spec)
    local wh = mgr:webhook(spec)
    hooks[#hooks + 1] = wh
    return wh
  end,
}
local chunk = assert(loadfile("examples/website/operator.lua"))
local ok, lerr = pcall(chunk, proxy)
if not ok then fail(lerr) end
local validate
for _, wh in ipairs(hooks) do
  if wh:type() == "validating" then validate = wh end
end
if not validate then fail("examples/website/operator.lua registered no validating webhook") end

local RES = "example.kinformer.io/v1/websites"
local function site(name, image)
  return { apiVersion = "example.kinformer.io/v1", kind = "Website",
           metadata = { name = name, namespace = "default",
                        labels = { ["app.kubernetes.io/name"] = "website", ["app.kubernetes.io/part-of"] = "bench" } },
           spec = { image = image, replicas = 2, port = 8080 } }
end

if a.mode == "serve" then
  local sok, err = mgr:start { timeout = timeout }
  if not sok then fail(err) end
  local f = assert(io.open(assert(a.ready_file, "--ready-file F required"), "w"))
  f:write(validate:path(), "\n")
  f:close()
  local deadline = common.monotime() + timeout
  while common.monotime() < deadline do common.sleep(0.2) end
  mgr:stop()
  sim:stop()
  os.exit(0)
end

local n = assert(tonumber(a.creates), "--creates N required")
local client = mgr.client
-- names made before the clocks start
local base, hooked = {}, {}
for i = 1, n do
  base[i] = site("base-" .. i, "nginx:1.27")
  hooked[i] = site("hooked-" .. i, "nginx:1.27")
end

-- creates list[1..n]; returns the seconds taken, or raises
local function creates(list)
  local t0 = common.monotime()
  for i = 1, #list do
    local obj, err = client:create(RES, list[i])
    if not obj then error(("create %s: %s"):format(list[i].metadata.name, tostring(err)), 0) end
  end
  return common.monotime() - t0
end

-- warm-up, outside the clocks: the connection, the sim's paths, and the
-- store past its first objects (each phase's first creates are slower)
local warm = {}
for i = 1, math.max(200, n // 5) do warm[i] = site("warm-" .. i, "nginx:1.27") end
local wok, werr = pcall(creates, warm)
if not wok then fail(werr) end
local bok, base_s = pcall(creates, base)
if not bok then fail(base_s) end
local sok, err = mgr:start { timeout = timeout }
if not sok then fail(err) end
-- outside the clock: the hook is in the chain (a bad Website is denied)
local denied, derr = client:create(RES, site("no-image", ""))
if denied then fail("a Website without an image was stored: the webhook is not in the sim's chain") end
r.denied_message = tostring(derr)
for i = 1, 200 do -- the hook's worker states warm
  local ok2, e2 = client:create(RES, site("warm-hooked-" .. i, "nginx:1.27"))
  if not ok2 then fail(e2) end
end
-- the server's own metrics (controller-runtime's names): calls and time
local function served()
  local text = require("kinformer.metrics").render()
  local p = validate:path():gsub("%p", "%%%0")
  return tonumber(text:match('\ncontroller_runtime_webhook_requests_total{webhook="' .. p .. '",code="200"} (%d+)')) or 0,
    tonumber(text:match('\ncontroller_runtime_webhook_latency_seconds_sum{webhook="' .. p .. '"} ([%d.e+-]+)')) or 0
end
local calls0, secs0 = served()
local hok, hooked_s = pcall(creates, hooked)
if not hok then fail(hooked_s) end
local calls1, secs1 = served()
mgr:stop()
sim:stop()
r.hook_calls = calls1 - calls0
if r.hook_calls ~= n then fail(("the validating hook answered %d of %d creates"):format(r.hook_calls, n)) end
r.hook_us_per_call = (secs1 - secs0) / r.hook_calls * 1e6
r.creates = n
r.base_per_s = n / base_s
r.webhook_per_s = n / hooked_s
r.webhook_us_per_create = (hooked_s - base_s) / n * 1e6
common.emit(r)
