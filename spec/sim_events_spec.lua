-- kinformer.sim's one Event storage behind v1 and events.k8s.io/v1 (issue 23):
-- the requests of spec/fixtures/sim_events/steps.json answered as
-- kube-apiserver v1.36.3 answered them (real.json, captured by
-- spec/e2e/capture-events.py), watches and Tables of either version, and
-- what kubectl describe reads.
local simmod = require "kinformer.sim"
local cjson = require "cjson"

local DIR = "spec/fixtures/sim_events/"

local function read_json(path)
  local f = assert(io.open(path))
  local v = cjson.decode(f:read("a"))
  f:close()
  return v
end

-- curl to the sim: returns the HTTP status and the body's text.
-- headers: extra header lines; body: a table (sent as JSON) or nil.
local function curl(sim, method, path, body, headers, extra)
  local cmd = { "curl -s -o - -w '\\n%{http_code}' -X", method }
  for _, h in ipairs(headers or {}) do cmd[#cmd + 1] = "-H '" .. h .. "'" end
  local bodyf
  if body then
    bodyf = os.tmpname()
    local f = assert(io.open(bodyf, "w"))
    f:write(cjson.encode(body))
    f:close()
    cmd[#cmd + 1] = "--data-binary @" .. bodyf
  end
  cmd[#cmd + 1] = extra or ""
  cmd[#cmd + 1] = "'" .. sim.url .. path .. "'"
  local p = assert(io.popen(table.concat(cmd, " ")))
  local out = p:read("a")
  p:close()
  if bodyf then os.remove(bodyf) end
  local text, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code), text
end

local function request(sim, method, path, body, content_type)
  -- the capture's client (its managers are named after the User-Agent)
  local code, text = curl(sim, method, path, body,
    { "Content-Type: " .. (content_type or "application/json"), "Accept: application/json",
      "User-Agent: Python-urllib/3.12" })
  local ok, v = pcall(cjson.decode, text)
  return code, ok and v or text
end

-- What differs between two servers by nature: uids, resourceVersions,
-- times of creation and of managedFields entries (entries ordered by
-- manager and version).
local function normalize(v)
  if type(v) ~= "table" then return v end
  local md = v.metadata
  if type(md) == "table" then
    md.uid, md.resourceVersion, md.creationTimestamp = nil, nil, nil
    for _, e in ipairs(type(md.managedFields) == "table" and md.managedFields or {}) do e.time = nil end
    if type(md.managedFields) == "table" then
      table.sort(md.managedFields, function(a, b)
        return a.manager .. a.apiVersion < b.manager .. b.apiVersion
      end)
    end
  end
  if type(v.details) == "table" then v.details.uid = nil end
  if type(v.items) == "table" then
    for _, it in ipairs(v.items) do normalize(it) end
  end
  return v
end

describe("kinformer.sim Events", function()
  local sim
  before_each(function() sim = assert(simmod.start()) end)
  after_each(function() sim:stop() end)

  it("answers every request of the captured round trips as kube-apiserver v1.36.3", function()
    local steps = read_json(DIR .. "steps.json")
    local real = read_json(DIR .. "real.json")
    assert.are.equal(#steps, #real)
    for i, step in ipairs(steps) do
      assert.are.equal(step.name, real[i].name)
      local code, got = request(sim, step.method, step.path, step.body, step.content_type)
      assert.are.same({ step.name, real[i].code, normalize(real[i].response) },
        { step.name, code, normalize(got) })
    end
  end)

  it("shows an events.k8s.io/v1 event in the v1 watch and the v1 one in the events.k8s.io watch", function()
    local new = read_json(DIR .. "steps.json")[1]
    local core = read_json(DIR .. "steps.json")[4]
    local ns = "/namespaces/default/events"
    local _, before = request(sim, "GET", "/api/v1" .. ns)
    local rv = before.metadata.resourceVersion
    assert.are.equal(201, (request(sim, "POST", new.path, new.body)))
    assert.are.equal(201, (request(sim, "POST", core.path, core.body)))
    -- the events after rv, each watch ended by timeoutSeconds
    local function events(prefix, query)
      local _, text = curl(sim, "GET", prefix .. ns .. "?watch=1&timeoutSeconds=1&resourceVersion=" .. rv ..
        (query or ""))
      local out = {}
      for line in text:gmatch("[^\n]+") do
        local e = cjson.decode(line)
        out[e.object.metadata.name] = e
      end
      return out
    end
    local v1, ev = events("/api/v1"), events("/apis/events.k8s.io/v1")
    assert.are.equal("ADDED", v1["new-full"].type)
    assert.are.equal("v1", v1["new-full"].object.apiVersion)
    assert.are.equal("scaled to 3 replicas", v1["new-full"].object.message)
    assert.are.equal("web", v1["new-full"].object.involvedObject.name)
    assert.are.equal("example.com/web-operator", v1["new-full"].object.reportingComponent)
    assert.are.equal("events.k8s.io/v1", ev["core-full"].object.apiVersion)
    assert.are.equal("pulled image", ev["core-full"].object.note)
    assert.are.equal("web-1", ev["core-full"].object.regarding.name)
    assert.are.same({ component = "kubelet", host = "node-1" }, ev["core-full"].object.deprecatedSource)
    assert.are.equal(4, ev["core-full"].object.deprecatedCount)
    -- a field selector of events.k8s.io/v1 on the watch
    local sel = events("/apis/events.k8s.io/v1", "&fieldSelector=regarding.name%3Dweb-1")
    assert.is_nil(sel["new-full"])
    assert.are.equal("pulled image", sel["core-full"].object.note)
    -- the same object in both: one storage, one resourceVersion
    assert.are.equal(v1["new-full"].object.metadata.resourceVersion,
      ev["new-full"].object.metadata.resourceVersion)
  end)

  it("lists a Table of events.k8s.io/v1 events and protobuf of both versions", function()
    local new = read_json(DIR .. "steps.json")[1]
    assert.are.equal(201, (request(sim, "POST", new.path, new.body)))
    for _, prefix in ipairs { "/api/v1", "/apis/events.k8s.io/v1" } do
      local code, text = curl(sim, "GET", prefix .. "/namespaces/default/events", nil,
        { "Accept: application/json;as=Table;v=v1;g=meta.k8s.io" })
      assert.are.equal(200, code)
      local t = cjson.decode(text)
      local cells = t.rows[1].cells
      assert.are.same({ "Normal", "Scaled", "deployment/web", "spec.replicas",
        "example.com/web-operator, web-operator-7d9f-abcde", "scaled to 3 replicas" },
        { cells[2], cells[3], cells[4], cells[5], cells[6], cells[7] })
      assert.are.equal(3, cells[9])
      local pcode, pb = curl(sim, "GET", prefix .. "/namespaces/default/events/new-full", nil,
        { "Accept: application/vnd.kubernetes.protobuf" })
      assert.are.equal(200, pcode)
      assert.are.equal("k8s\0", pb:sub(1, 4))
      -- the envelope names the version asked for
      assert.truthy(pb:find(prefix == "/api/v1" and "\n\2v1\18\5Event" or "events.k8s.io/v1", 1, true))
      assert.truthy(pb:find("scaled to 3 replicas", 1, true))
      -- a protobuf watch's frames carry the object in the version watched
      local wcode, frames = curl(sim, "GET", prefix .. "/namespaces/default/events?watch=1&timeoutSeconds=1",
        nil, { "Accept: application/vnd.kubernetes.protobuf;stream=watch" })
      assert.are.equal(200, wcode)
      assert.truthy(frames:find("ADDED", 1, true))
      assert.truthy(frames:find("scaled to 3 replicas", 1, true))
      if prefix == "/api/v1" then
        assert.truthy(frames:find("web-operator-7d9f-abcde", 1, true))
        assert.truthy(frames:find("\n\2v1\18\5Event", 1, true)) -- runtime.Unknown's TypeMeta
      else
        assert.truthy(frames:find("events.k8s.io/v1", 1, true))
      end
    end
  end)

  it("gives kubectl describe's query the event written through events.k8s.io/v1", function()
    -- kubectl describe lists core v1 events with the involvedObject field
    -- selector of the object (describe.searchEvents)
    local code, cm = request(sim, "POST", "/api/v1/namespaces/default/configmaps",
      { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "described" } })
    assert.are.equal(201, code)
    local ev = { apiVersion = "events.k8s.io/v1", kind = "Event", metadata = { name = "described.1" },
      eventTime = "2026-01-02T03:04:05.000000Z", reportingController = "kinformer",
      reportingInstance = "kinformer-1", action = "Reconcile", reason = "Synced", type = "Normal",
      regarding = { kind = "ConfigMap", namespace = "default", name = "described", uid = cm.metadata.uid,
        apiVersion = "v1" }, note = "written through events.k8s.io" }
    assert.are.equal(201, (request(sim, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", ev)))
    local sel = "involvedObject.name%3Ddescribed,involvedObject.namespace%3Ddefault," ..
      "involvedObject.kind%3DConfigMap,involvedObject.uid%3D" .. cm.metadata.uid
    local lcode, list = request(sim, "GET", "/api/v1/namespaces/default/events?fieldSelector=" .. sel)
    assert.are.equal(200, lcode)
    assert.are.equal(1, #list.items)
    assert.are.equal("written through events.k8s.io", list.items[1].message)
    assert.are.equal("kinformer", list.items[1].reportingComponent)
    -- kubectl itself, where the e2e tier built it
    local kubectl = (os.getenv("HOME") or "") .. "/.cache/kinformer-e2e/v1.36.3/bin/kubectl"
    local f = io.open(kubectl)
    if f then
      f:close()
      local p = assert(io.popen(string.format("%s --kubeconfig %s describe configmap described 2>&1",
        kubectl, sim.kubeconfig)))
      local out = p:read("a")
      p:close()
      assert.truthy(out:find("Normal%s+Synced%s+%S+%s+kinformer%s+written through events.k8s.io"), out)
    end
  end)

  it("updates and patches through events.k8s.io/v1 in that version's shape", function()
    local new = read_json(DIR .. "steps.json")[1]
    local E = "/apis/events.k8s.io/v1/namespaces/default/events/new-full"
    local code, ev = request(sim, "POST", new.path, new.body)
    assert.are.equal(201, code)
    ev.metadata.labels.put = "yes"
    local pcode, put = request(sim, "PUT", E, ev)
    assert.are.equal(200, pcode)
    assert.are.equal("yes", put.metadata.labels.put)
    assert.are.equal("scaled to 3 replicas", put.note)
    local jcode, jp = request(sim, "PATCH", E, { { op = "replace", path = "/series/count", value = 4 } },
      "application/json-patch+json")
    assert.are.equal(200, jcode)
    assert.are.equal(4, jp.series.count)
    local scode, sp = request(sim, "PATCH", E, { metadata = { annotations = { s = "1" } } },
      "application/strategic-merge-patch+json")
    assert.are.equal(200, scode)
    assert.are.equal("1", sp.metadata.annotations.s)
    local _, core = request(sim, "GET", "/api/v1/namespaces/default/events/new-full")
    assert.are.same({ 4, "yes", "1", "scaled to 3 replicas" },
      { core.series.count, core.metadata.labels.put, core.metadata.annotations.s, core.message })
    -- a change of an immutable field through events.k8s.io/v1 is refused
    local icode, st = request(sim, "PATCH", E, { regarding = { name = "other" } },
      "application/merge-patch+json")
    assert.are.equal(422, icode)
    assert.are.equal("involvedObject", st.details.causes[1].field)
  end)

  it("keeps one storage: deleting through one version removes it from the other", function()
    local steps = read_json(DIR .. "steps.json")
    local new, core = steps[1], steps[4]
    assert.are.equal(201, (request(sim, "POST", new.path, new.body)))
    assert.are.equal(200, (request(sim, "DELETE", "/api/v1/namespaces/default/events/new-full")))
    assert.are.equal(404, (request(sim, "GET", "/apis/events.k8s.io/v1/namespaces/default/events/new-full")))
    -- deletecollection with an events.k8s.io field selector, answered in that version
    assert.are.equal(201, (request(sim, "POST", core.path, core.body)))
    local code, list = request(sim, "DELETE",
      "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dweb-1")
    assert.are.equal(200, code)
    assert.are.equal(1, #list.items)
    assert.are.equal("pulled image", list.items[1].note)
    local _, left = request(sim, "GET", "/api/v1/namespaces/default/events")
    assert.are.equal(0, #left.items)
  end)

  it("serves no events.k8s.io with legacy_events, and v1 events as before", function()
    sim:stop()
    sim = assert(simmod.start { legacy_events = true })
    local core = read_json(DIR .. "steps.json")[4]
    assert.are.equal(201, (request(sim, "POST", core.path, core.body)))
    assert.are.equal(404, (request(sim, "GET", "/apis/events.k8s.io/v1/namespaces/default/events/core-full")))
    local code, got = request(sim, "GET", "/api/v1/namespaces/default/events/core-full")
    assert.are.equal(200, code)
    assert.are.equal("pulled image", got.message)
  end)
end)
