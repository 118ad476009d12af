-- `kinformer types` (lua/kinformer/cmd/types.lua): LuaCATS classes of
-- Kubernetes objects from the server's OpenAPI v3 documents. The pure part
-- (M.generate) against kinformer.sim's documents and against documents
-- made here; the command through bin/kinformer. make typecheck runs the
-- type checker over its output (tools/typecheck.sh).
local types = require "kinformer.cmd.types"
local kinformer = require "kinformer"
local core = require "kinformer.core"
local proc = require "spec.support.proc"

local function lines_of(text)
  local set = {}
  for l in text:gmatch("[^\n]+") do set[l] = (set[l] or 0) + 1 end
  return set
end

-- The classes the text defines and the k8s.* types its fields name.
local function classes(text)
  local defined, used = {}, {}
  for l in text:gmatch("[^\n]+") do
    local c = l:match("^%-%-%-@class ([%w_.]+)")
    if c then defined[c] = (defined[c] or 0) + 1 end
    local ty = l:match("^%-%-%-@field %S+ (%S+)")
    if ty then
      for name in ty:gmatch("k8s[%w_.]*[%w_]") do used[name] = true end
    end
  end
  return defined, used
end

-- Runs bin/kinformer with args; returns stdout, stderr, exit status.
local function kinformer_cmd(args)
  local err = os.tmpname()
  local out, rc = proc.run("bin/kinformer " .. args .. " 2>" .. err)
  local f = assert(io.open(err))
  local e = f:read("a")
  f:close()
  os.remove(err)
  return out, e, rc
end

describe("kinformer types", function()
  describe("against kinformer.sim's OpenAPI documents", function()
    local sim, mgr, fetch, text

    setup(function()
      sim = assert(require("kinformer.sim").start { seed = "examples/website/seed.json" })
      mgr = assert(kinformer.manager { sim = sim })
      fetch = function(path)
        local body, msg = mgr.client:get_raw(path)
        return body, msg
      end
      text = assert(types.generate(fetch, { "apps/v1/deployments", "example.kinformer.io/v1/websites" }))
    end)

    teardown(function()
      if mgr then mgr:stop() end
      if sim then sim:stop() end
    end)

    it("prints the Deployment's class and the schemas it references", function()
      local have = lines_of(text)
      for _, l in ipairs {
        "---@meta",
        "---Deployment enables declarative updates for Pods and ReplicaSets.",
        "---@class k8s.apps.v1.Deployment: kinformer.KObject",
        "---@field metadata? k8s.meta.v1.ObjectMeta Standard object's metadata.",
        "---@field spec? k8s.apps.v1.DeploymentSpec Specification of the desired behavior of the Deployment.",
        "---@class k8s.apps.v1.DeploymentSpec",
        "---@field replicas? integer Number of desired pods.",
        "---@field paused? boolean Indicates that the deployment is paused.",
        -- required
        "---@field selector k8s.meta.v1.LabelSelector Label selector for pods.",
        "---@field template k8s.core.v1.PodTemplateSpec Template describes the pods that will be created.",
        -- arrays, maps, int-or-string, quantities, RawExtension-like objects
        "---@field containers k8s.core.v1.Container[] List of containers belonging to the pod.",
        "---@field labels? table<string, string> Map of string keys and values that can be used to "
          .. "organize and categorize (scope and select) objects.",
        "---@field maxSurge? integer|string The maximum number of pods that can be scheduled above "
          .. "the desired number of pods.",
        "---@field limits? table<string, string|number> Limits describes the maximum amount of compute "
          .. "resources allowed.",
        "---@field fieldsV1? table FieldsV1 holds the first JSON version format as described in the "
          .. '"FieldsV1" type.',
      } do
        assert.is_not_nil(have[l], "missing line: " .. l)
      end
    end)

    it("prints the Website's class from its CRD, inline objects named by their path", function()
      local have = lines_of(text)
      for _, l in ipairs {
        "---@class k8s.example.kinformer.io.v1.Website: kinformer.KObject",
        "---@field metadata? kinformer.ObjectMeta Standard object's metadata.",
        "---@field spec? k8s.example.kinformer.io.v1.Website.spec",
        "---@field status? k8s.example.kinformer.io.v1.Website.status",
        "---@class k8s.example.kinformer.io.v1.Website.spec",
        "---@field image? string", -- checked by the example's validating webhook, not the schema
        "---@field port? integer",
        "---@field replicas? integer",
        "---@field conditions? k8s.example.kinformer.io.v1.Website.status.conditions[]",
        "---@class k8s.example.kinformer.io.v1.Website.status.conditions",
        "---@field status string",
        "---@field observedGeneration? integer",
      } do
        assert.is_not_nil(have[l], "missing line: " .. l)
      end
    end)

    it("defines each class once and every class its fields name", function()
      local defined, used = classes(text)
      local twice, undefined = {}, {}
      for c, n in pairs(defined) do if n > 1 then twice[#twice + 1] = c end end
      for c in pairs(used) do if not defined[c] then undefined[#undefined + 1] = c end end
      table.sort(undefined)
      assert.are.same({}, twice)
      assert.are.same({}, undefined)
      assert.is_true(next(defined) ~= nil and defined["k8s.core.v1.PodSpec"] == 1)
    end)

    it("is Lua (comments only) and the same every time", function()
      assert(load(text, "=types", "t"))
      assert.equals(text, assert(types.generate(fetch, { "apps/v1/deployments", "example.kinformer.io/v1/websites" })))
    end)

    it("prints every schema with --all", function()
      local all = assert(types.generate(fetch, "--all"))
      assert(load(all, "=all", "t"))
      local defined, used = classes(all)
      for _, c in ipairs { "k8s.apps.v1.Deployment", "k8s.core.v1.ConfigMap", "k8s.coordination.v1.Lease",
                           "k8s.example.kinformer.io.v1.Website", "k8s.apiextensions.v1.JSONSchemaProps" } do
        assert.equals(1, defined[c], c)
      end
      for c in pairs(used) do assert.is_not_nil(defined[c], c) end
      assert.is_not_nil(lines_of(all)['---@field ["not"]? k8s.apiextensions.v1.JSONSchemaProps'])
    end)

    it("names a resource the server lacks", function()
      local t, msg = types.generate(fetch, { "apps/v1/deploymentz" })
      assert.is_nil(t)
      assert.equals("the server has no apps/v1/deploymentz: its OpenAPI document apis/apps/v1 does not serve it", msg)
      t, msg = types.generate(fetch, { "example.kinformer.io/v3/websites" })
      assert.is_nil(t)
      assert.equals("the server has no example.kinformer.io/v3/websites: no OpenAPI document for "
        .. "apis/example.kinformer.io/v3", msg)
    end)
  end)

  describe("M.generate on documents made here", function()
    local docs = {
      ["/openapi/v3"] = { paths = {
        ["apis/example.com/v1"] = { serverRelativeURL = "/openapi/v3/apis/example.com/v1?hash=1" } } },
      ["/openapi/v3/apis/example.com/v1?hash=1"] = {
        paths = { ["/apis/example.com/v1/gadgets"] = { get = {
          ["x-kubernetes-group-version-kind"] = { group = "example.com", version = "v1", kind = "Gadget" } } } },
        components = { schemas = {
          ["com.example.v1.Gadget"] = {
            description = "A gadget. It does things, e.g. this.",
            ["x-kubernetes-group-version-kind"] = { { group = "example.com", version = "v1", kind = "Gadget" } },
            required = { "spec" },
            properties = {
              spec = { type = "object", properties = {
                ["not"] = { type = "boolean", description = "Negates.\nOn two lines." },
                ["x-size"] = { oneOf = { { type = "integer" }, { type = "string" } } },
                ports = { type = "array", items = { ["x-kubernetes-int-or-string"] = true } },
                extra = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true },
                tags = { type = "object", additionalProperties = { type = "array", items = { type = "string" } } },
                any = { type = "object", additionalProperties = true },
                ratio = { type = "number" },
                nothing = {},
                parts = { type = "array", items = { type = "object", required = { "name" },
                  properties = { name = { type = "string" } } } },
              } },
            },
          },
        } },
      },
    }
    local function fetch(path)
      local d = docs[path]
      if not d then return nil, "no " .. path end
      return core.json_encode(d)
    end

    it("maps each kind of schema as documented", function()
      local text = assert(types.generate(fetch, { "example.com/v1/gadgets" }))
      assert.equals(table.concat({
        "---@meta",
        "-- Kubernetes object types for editors (LuaCATS), made by `kinformer types` from the",
        "-- server's OpenAPI v3 documents for example.com/v1/gadgets. A kind's class extends",
        "-- kinformer.KObject (kinformer's types/). Use: ---@type k8s.apps.v1.Deployment",
        "",
        "---A gadget.",
        "---@class k8s.example.com.v1.Gadget: kinformer.KObject",
        "---@field spec k8s.example.com.v1.Gadget.spec",
        "",
        "---@class k8s.example.com.v1.Gadget.spec",
        "---@field any? table<string, any>",
        "---@field extra? table",
        '---@field ["not"]? boolean Negates.',
        "---@field nothing? any",
        "---@field parts? k8s.example.com.v1.Gadget.spec.parts[]",
        "---@field ports? (integer|string)[]",
        "---@field ratio? number",
        "---@field tags? table<string, string[]>",
        '---@field ["x-size"]? integer|string',
        "",
        "---@class k8s.example.com.v1.Gadget.spec.parts",
        "---@field name string",
        "",
      }, "\n"), text)
      assert(load(text, "=gadget", "t"))
    end)

    it("passes on what fetch says when a document cannot be read", function()
      docs["/openapi/v3"].paths["apis/example.com/v1"].serverRelativeURL = "/gone"
      local t, msg = types.generate(fetch, { "example.com/v1/gadgets" })
      docs["/openapi/v3"].paths["apis/example.com/v1"].serverRelativeURL = "/openapi/v3/apis/example.com/v1?hash=1"
      assert.is_nil(t)
      assert.equals("no /gone", msg)
    end)

    it("names the classes of built-in schemas without their Go package", function()
      assert.equals("k8s.apps.v1.DeploymentSpec", types.class_name("io.k8s.api.apps.v1.DeploymentSpec"))
      assert.equals("k8s.meta.v1.ObjectMeta", types.class_name("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))
      assert.equals("k8s.apiextensions.v1.JSONSchemaProps",
        types.class_name("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"))
      assert.equals("k8s.my_group.example.com.v1.Thing", types.class_name("com.example.my-group.v1.Thing",
        { ["x-kubernetes-group-version-kind"] = { { group = "my-group.example.com", version = "v1", kind = "Thing" } } }))
    end)
  end)

  describe("the command", function()
    it("prints the classes (bin/kinformer types --sim)", function()
      local out, err, rc = kinformer_cmd("types --sim --seed examples/website/seed.json example.kinformer.io/v1/websites")
      assert.equals(0, rc, err)
      assert.matches("\n%-%-%-@class k8s%.example%.kinformer%.io%.v1%.Website: kinformer%.KObject\n", out)
      assert.equals("", err)
    end)

    it("exits 1 naming a resource the server lacks", function()
      local out, err, rc = kinformer_cmd("types --sim v1/configmaps apps/v1/deploymentz")
      assert.equals(1, rc)
      assert.equals("", out)
      assert.equals("kinformer: the server has no apps/v1/deploymentz: its OpenAPI document apis/apps/v1 "
        .. "does not serve it\n", err)
    end)

    it("exits 1 naming the URL and the status when the server refuses", function()
      local sim = assert(require("kinformer.sim").start { token = "secret" })
      local kc = os.tmpname()
      proc.write(kc, ([[
apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: "%s"}}]
users: [{name: u, user: {token: wrong}}]
contexts: [{name: c, context: {cluster: s, user: u}}]
current-context: c
]]):format(sim.url))
      local _, err, rc = kinformer_cmd("types --kubeconfig " .. kc .. " v1/configmaps")
      sim:stop()
      os.remove(kc)
      assert.equals(1, rc)
      assert.matches("^kinformer: cannot read " .. sim.url:gsub("%p", "%%%0") .. "/openapi/v3: HTTP 401 Unauthorized: ", err)
    end)

    it("exits 2 on a usage error, with the usage", function()
      for _, args in ipairs { "types", "types --seed x.json v1/pods", "types --bogus v1/pods",
                              "types --all v1/pods", "types --sim --kubeconfig k v1/pods" } do
        local out, err, rc = kinformer_cmd(args)
        assert.equals(2, rc, args)
        assert.equals("", out, args)
        assert.matches("^kinformer: .*\nusage: kinformer types ", err)
      end
      local out, _, rc = kinformer_cmd("types --help")
      assert.equals(0, rc)
      assert.matches("^usage: kinformer types ", out)
    end)
  end)
end)
