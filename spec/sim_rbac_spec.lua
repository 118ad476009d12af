-- kinformer.sim with authorization = "rbac" (csrc/sim/auth/): the RBAC
-- authorizer against the built-in cluster roles and the roles and bindings
-- created, the 403 texts and the review APIs held to kube-apiserver
-- v1.36.3's answers (spec/fixtures/sim_rbac/real_answers.json, captured by
-- spec/e2e/capture-rbac.sh), and an example operator run under the RBAC
-- `kinformer manifests` prints for it: 0 forbidden, then one rule removed
-- and the real server's forbidden text.
local simmod = require "kinformer.sim"
local cjson = require "cjson"
local proc = require "support.proc"

local F = "spec/c/fixtures/"

-- HTTP through curl: returns the status and the decoded body (or the text).
-- opts: token, body (string or table), cert (a fixture's base name),
-- headers (more "Name: value" lines), content_type (default JSON).
local function http(sim, method, path, opts)
  opts = opts or {}
  local args = { "curl -sk -o - -w '\\n%{http_code}' -X " .. method,
                 "-H 'Content-Type: " .. (opts.content_type or "application/json") .. "'" }
  if opts.token then args[#args + 1] = "-H 'Authorization: Bearer " .. opts.token .. "'" end
  for _, h in ipairs(opts.headers or {}) do args[#args + 1] = "-H '" .. h .. "'" end
  if opts.cert then
    args[#args + 1] = string.format("--cert %s%s.crt --key %s%s.key", F, opts.cert, F, opts.cert)
  end
  local bodyf
  if opts.body then
    bodyf = proc.write_tmp(type(opts.body) == "table" and cjson.encode(opts.body) or opts.body)
    args[#args + 1] = "--data-binary @" .. bodyf
  end
  args[#args + 1] = "'" .. sim.url .. path .. "'"
  local p = assert(io.popen(table.concat(args, " ")))
  local out = p:read("a")
  p:close()
  if bodyf then os.remove(bodyf) end
  local text, code = out:match("^(.*)\n(%d+)$")
  local ok, decoded = pcall(cjson.decode, text)
  return tonumber(code), ok and decoded or text
end

local function create(sim, path, obj, token)
  local code, body = http(sim, "POST", path, { body = obj, token = token })
  assert(code == 201, path .. ": " .. tostring(code) .. " " .. cjson.encode(body))
  return body
end

local RBAC = "/apis/rbac.authorization.k8s.io/v1/"

local function role(ns, name, rules, kind)
  return { apiVersion = "rbac.authorization.k8s.io/v1", kind = kind or "Role",
           metadata = { name = name, namespace = ns }, rules = rules }
end

local function binding(ns, name, role_kind, role_name, subjects)
  return { apiVersion = "rbac.authorization.k8s.io/v1", kind = ns and "RoleBinding" or "ClusterRoleBinding",
           metadata = { name = name, namespace = ns },
           roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = role_kind, name = role_name },
           subjects = subjects }
end

local function sar(sim, spec, token)
  local code, body = http(sim, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    { token = token, body = { apiVersion = "authorization.k8s.io/v1", kind = "SubjectAccessReview", spec = spec } })
  assert.equal(201, code, cjson.encode(body))
  return body.status
end

describe("kinformer.sim authorization = \"rbac\"", function()
  it("rejects an unknown mode", function()
    assert.has_error(function() simmod.start{ authorization = "abac" } end)
  end)

  it("creates kube-apiserver's bootstrap policy, aggregated roles filled, in every mode", function()
    local sim = assert(simmod.start{})
    local code, list = http(sim, "GET", RBAC .. "clusterroles?labelSelector=kubernetes.io%2Fbootstrapping%3Drbac-defaults")
    assert.equal(200, code)
    local names = {}
    for _, r in ipairs(list.items) do names[r.metadata.name] = r end
    for _, n in ipairs { "cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
                         "system:public-info-viewer", "system:aggregate-to-view" } do
      assert.is_not_nil(names[n], n)
    end
    -- view aggregates system:aggregate-to-view, admin also edit's rules
    assert.same(names["system:aggregate-to-view"].rules, names.view.rules)
    assert.is_true(#names.admin.rules > #names.edit.rules)
    code, list = http(sim, "GET", RBAC .. "clusterrolebindings")
    assert.equal(200, code)
    local crbs = {}
    for _, b in ipairs(list.items) do crbs[b.metadata.name] = b end
    assert.equal("system:masters", crbs["cluster-admin"].subjects[1].name)
    code = http(sim, "GET", RBAC .. "namespaces/kube-system/roles/extension-apiserver-authentication-reader")
    assert.equal(200, code)
    -- the bootstrap policy is not authorized against in AlwaysAllow mode
    code = http(sim, "GET", "/api/v1/pods", { token = sim:token("nobody") })
    assert.equal(200, code)
    sim:stop()
  end)

  describe("against kube-apiserver v1.36.3's answers", function()
    local real = cjson.decode(proc.read("spec/fixtures/sim_rbac/real_answers.json"))
    local sim, tokens
    setup(function()
      sim = assert(simmod.start{ authorization = "rbac" })
      -- the objects spec/e2e/capture-rbac.sh made
      create(sim, "/api/v1/namespaces/default/serviceaccounts",
        { apiVersion = "v1", kind = "ServiceAccount", metadata = { name = "op" } })
      create(sim, RBAC .. "namespaces/default/roles", role("default", "cm-reader",
        { { apiGroups = { "" }, resources = { "configmaps" }, verbs = { "get", "list", "watch" } } }))
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "op-cm", "Role", "cm-reader",
        { { kind = "ServiceAccount", name = "op", namespace = "default" } }))
      create(sim, RBAC .. "namespaces/kube-public/rolebindings", binding("kube-public", "op-missing", "Role", "nope",
        { { kind = "ServiceAccount", name = "op", namespace = "default" } }))
      create(sim, RBAC .. "namespaces/default/roles", role("default", "rbac-writer",
        { { apiGroups = { "rbac.authorization.k8s.io" }, resources = { "roles", "rolebindings" }, verbs = { "create" } } }))
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "op-rbac-writer", "Role", "rbac-writer",
        { { kind = "ServiceAccount", name = "op", namespace = "default" } }))
      create(sim, RBAC .. "clusterrolebindings", binding(nil, "kinformer-e2e-token", "ClusterRole", "cluster-admin",
        { { apiGroup = "rbac.authorization.k8s.io", kind = "User", name = "kinformer-token" } }))
      tokens = { sa = sim:token("system:serviceaccount:default:op"), nobody = sim:token("kinformer-nobody"),
                 admin = sim:token("kinformer-token") }
    end)
    teardown(function() sim:stop() end)

    -- which token each captured request used
    local who = { nonresource_post = "nobody", nobody_list = "nobody", discovery = "nobody", tokenreview = "admin",
                  tokenreview_bad = "admin" }
    for _, a in ipairs(real) do
      if a.name:match("^l?sar_") or a.name:match("^sar_") then who[a.name] = "admin" end
      if a.name:match("^ssa?r") then who[a.name] = "sa" end
    end
    who.sar_forbidden = "sa"

    -- the request bodies the capture sent, where the answer does not echo them
    local special = {
      sar_no_attrs = { "SubjectAccessReview", { user = "x" } },
      sar_no_user = { "SubjectAccessReview", { resourceAttributes = { verb = "get", resource = "pods" } } },
      lsar_ns_mismatch = { "LocalSubjectAccessReview",
                           { user = "x", resourceAttributes = { verb = "get", resource = "pods", namespace = "other" } } },
      ssrr = { "SelfSubjectRulesReview", { namespace = "default" } },
      ssrr_no_ns = { "SelfSubjectRulesReview", {} },
      sar_forbidden = { "SubjectAccessReview", { user = "x", resourceAttributes = { verb = "get", resource = "pods" } } },
    }
    -- the escalation checks' requests (spec/e2e/capture-rbac.sh)
    local R = "rbac.authorization.k8s.io/v1"
    local escalation = {
      esc_role = role(nil, "more", {
        { apiGroups = { "" }, resources = { "pods" }, verbs = { "get", "list" } },
        { apiGroups = { "" }, resources = { "configmaps" }, verbs = { "get", "delete" } },
        { apiGroups = { "apps" }, resources = { "deployments/scale" }, resourceNames = { "a", "b" }, verbs = { "update" } } }),
      ok_role = role(nil, "same", { { apiGroups = { "" }, resources = { "configmaps" }, verbs = { "get", "list" } } }),
      esc_binding = binding("default", "b-view", "ClusterRole", "system:aggregate-to-view", { { kind = "User", name = "x" } }),
      ok_binding = binding("default", "b-same", "Role", "cm-reader", { { kind = "User", name = "x" } }),
      binding_missing = binding("default", "b-nope", "Role", "nope", { { kind = "User", name = "x" } }),
    }
    local function body_of(a)
      if escalation[a.name] then
        local b = escalation[a.name]
        b.apiVersion, b.metadata.namespace = R, nil
        return b
      end
      local s = special[a.name]
      if s then return { apiVersion = "authorization.k8s.io/v1", kind = s[1], spec = s[2] } end
      if a.name == "tokenreview" then
        return { apiVersion = "authentication.k8s.io/v1", kind = "TokenReview", spec = { token = tokens.nobody } }
      end
      if a.method ~= "POST" and a.method ~= "PUT" then return nil end
      if a.body.kind == "Status" then return "{}" end
      return { apiVersion = a.body.apiVersion, kind = a.body.kind, spec = a.body.spec }
    end

    for _, a in ipairs(real) do
      it(("answers %s (%s %s) as the real server: %d"):format(a.name, a.method, a.path, a.code), function()
        local body = body_of(a)
        local code, got = http(sim, a.method, a.path, { token = tokens[who[a.name] or "sa"], body = body })
        assert.equal(a.code, code, cjson.encode(got))
        if a.body.kind == "Status" then
          assert.equal(a.body.message, got.message)
          assert.equal(a.body.reason, got.reason)
          if a.code == 403 then assert.same(a.body.details, got.details) end
        elseif a.name == "tokenreview" then
          assert.is_true(got.status.authenticated)
          assert.equal(a.body.status.user.username, got.status.user.username)
          assert.same(a.body.status.user.groups, got.status.user.groups)
          assert.same(a.body.status.audiences, got.status.audiences)
        elseif a.name == "whoami_sa" then
          assert.equal(a.body.status.userInfo.username, got.status.userInfo.username)
          assert.same(a.body.status.userInfo.groups, got.status.userInfo.groups)
        elseif a.name == "ssrr" then
          -- the same rules; the real server's order follows its informer cache
          local function sorted(rules)
            local out = {}
            for _, r in ipairs(rules) do out[#out + 1] = cjson.encode(r) end
            table.sort(out)
            return out
          end
          assert.same(sorted(a.body.status.resourceRules), sorted(got.status.resourceRules))
          assert.same(sorted(a.body.status.nonResourceRules), sorted(got.status.nonResourceRules))
          assert.equal(false, got.status.incomplete)
        elseif a.name == "sar_nonresource" then
          -- several cluster role bindings grant it: the real server names the
          -- first of its informer cache (map order), the sim the first by name
          assert.is_true(got.status.allowed)
          assert.matches('^RBAC: allowed by ClusterRoleBinding "system:[a-z-]+" of ClusterRole "system:[a-z-]+" '
            .. 'to Group "system:authenticated"$', got.status.reason)
        elseif a.body.kind and a.body.kind:match("AccessReview$") then
          assert.same(a.body.status, got.status)
          assert.same(a.body.spec, got.spec)
          if a.body.metadata.namespace then assert.equal(a.body.metadata.namespace, got.metadata.namespace) end
        elseif a.body.kind == "TokenReview" then
          assert.same(a.body.status, got.status)
        end
      end)
    end
  end)

  describe("decisions", function()
    local sim
    before_each(function() sim = assert(simmod.start{ authorization = "rbac" }) end)
    after_each(function() sim:stop() end)

    it("keeps the sim's own users all-powerful and refuses everyone else by default", function()
      assert.equal(200, (http(sim, "GET", "/api/v1/pods")))          -- anonymous, no auth configured
      assert.equal(200, (http(sim, "GET", "/api/v1/pods", { token = sim:token("kinformer-sim") })))
      local code, body = http(sim, "GET", "/api/v1/namespaces/default/secrets/s1", { token = sim:token("eve") })
      assert.equal(403, code)
      assert.equal('secrets "s1" is forbidden: User "eve" cannot get resource "secrets" in API group "" '
        .. 'in the namespace "default"', body.message)
      -- the discovery and public-info roles of every authenticated user
      assert.equal(200, (http(sim, "GET", "/apis", { token = sim:token("eve") })))
      assert.equal(200, (http(sim, "GET", "/version", { token = sim:token("eve") })))
      code = http(sim, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { token = sim:token("eve"),
        body = { apiVersion = "authorization.k8s.io/v1", kind = "SelfSubjectAccessReview",
                 spec = { resourceAttributes = { verb = "list", resource = "pods" } } } })
      assert.equal(201, code)
    end)

    it("grants through users, groups and service accounts, roles and cluster roles", function()
      create(sim, RBAC .. "namespaces/default/roles", role("default", "pod-reader",
        { { apiGroups = { "" }, resources = { "pods" }, verbs = { "get", "list", "watch" } } }))
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "r1", "Role", "pod-reader",
        { { kind = "User", name = "ann" }, { kind = "Group", name = "team" },
          { kind = "ServiceAccount", name = "robot" } }))  -- the binding's namespace
      create(sim, RBAC .. "clusterrolebindings", binding(nil, "c1", "ClusterRole", "view",
        { { kind = "ServiceAccount", name = "watcher", namespace = "ops" } }))
      local ann, robot, watcher = sim:token("ann"), sim:token("system:serviceaccount:default:robot"),
        sim:token("system:serviceaccount:ops:watcher")
      assert.equal(200, (http(sim, "GET", "/api/v1/namespaces/default/pods", { token = ann })))
      assert.equal(403, (http(sim, "GET", "/api/v1/namespaces/kube-system/pods", { token = ann })))
      assert.equal(403, (http(sim, "DELETE", "/api/v1/namespaces/default/pods/x", { token = ann })))
      assert.equal(200, (http(sim, "GET", "/api/v1/namespaces/default/pods", { token = robot })))
      -- a ServiceAccount subject without namespace is the binding's: not ops'
      assert.equal(403, (http(sim, "GET", "/api/v1/namespaces/default/pods",
        { token = sim:token("system:serviceaccount:ops:robot") })))
      -- the view cluster role, bound cluster-wide, aggregated from system:aggregate-to-view
      assert.equal(200, (http(sim, "GET", "/api/v1/configmaps", { token = watcher })))
      assert.equal(200, (http(sim, "GET", "/apis/apps/v1/namespaces/x/deployments", { token = watcher })))
      assert.equal(403, (http(sim, "GET", "/api/v1/secrets", { token = watcher })))
      -- a group subject, through SubjectAccessReview
      local st = sar(sim, { user = "zed", groups = { "team" },
        resourceAttributes = { verb = "watch", resource = "pods", namespace = "default" } })
      assert.same({ allowed = true, reason = 'RBAC: allowed by RoleBinding "r1/default" of Role "pod-reader" '
        .. 'to Group "team"' }, st)
      st = sar(sim, { user = "system:serviceaccount:ops:watcher",
        resourceAttributes = { verb = "list", group = "apps", resource = "deployments" } })
      assert.same({ allowed = true, reason = 'RBAC: allowed by ClusterRoleBinding "c1" of ClusterRole "view" '
        .. 'to ServiceAccount "watcher/ops"' }, st)
    end)

    it("matches resourceNames, subresources, wildcards and non-resource URLs", function()
      create(sim, RBAC .. "clusterroles", role(nil, "mixed", {
        { apiGroups = { "" }, resources = { "configmaps" }, resourceNames = { "a" }, verbs = { "get", "list" } },
        { apiGroups = { "apps" }, resources = { "*/scale" }, verbs = { "get" } },
        { apiGroups = { "" }, resources = { "pods/status" }, verbs = { "*" } },
        { apiGroups = { "*" }, resources = { "leases" }, verbs = { "list" } },
        { nonResourceURLs = { "/healthz/*", "/metrics" }, verbs = { "get" } },
      }, "ClusterRole"))
      create(sim, RBAC .. "clusterrolebindings", binding(nil, "mixed", "ClusterRole", "mixed",
        { { kind = "User", name = "max" } }))
      local t = sim:token("max")
      local ns = "/api/v1/namespaces/default/"
      assert.equal(404, (http(sim, "GET", ns .. "configmaps/a", { token = t })))  -- allowed, absent
      local code, body = http(sim, "GET", ns .. "configmaps/b", { token = t })
      assert.equal(403, code)
      assert.equal("b", body.details.name)
      assert.equal(403, (http(sim, "GET", ns .. "configmaps", { token = t })))
      -- a list narrowed to the name by its field selector is that name's
      assert.equal(200, (http(sim, "GET", ns .. "configmaps?fieldSelector=metadata.name%3Da", { token = t })))
      assert.equal(404, (http(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/d/scale", { token = t })))
      assert.equal(403, (http(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/d", { token = t })))
      code = http(sim, "PATCH", ns .. "pods/p/status", { token = t, body = "{}" })
      assert.equal(415, code) -- authorized, then refused for its content type
      code, body = http(sim, "PATCH", ns .. "pods/p", { token = t, body = "{}" })
      assert.equal(403, code)
      assert.equal('pods "p" is forbidden: User "max" cannot patch resource "pods" in API group "" '
        .. 'in the namespace "default"', body.message)
      assert.equal(200, (http(sim, "GET", "/apis/coordination.k8s.io/v1/leases", { token = t })))
      assert.equal(404, (http(sim, "GET", "/healthz/etcd", { token = t })))
      assert.equal(404, (http(sim, "GET", "/metrics", { token = t })))
      code, body = http(sim, "GET", "/logs", { token = t })
      assert.equal(403, code)
      assert.equal('forbidden: User "max" cannot get path "/logs"', body.message)
    end)

    it("aggregates cluster roles by their aggregationRule, as they change", function()
      create(sim, RBAC .. "clusterroles", { apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole",
        metadata = { name = "widgets" },
        aggregationRule = { clusterRoleSelectors = { { matchLabels = { ["example.com/widgets"] = "true" } } } } })
      create(sim, RBAC .. "clusterrolebindings", binding(nil, "w", "ClusterRole", "widgets",
        { { kind = "User", name = "wendy" } }))
      local spec = { user = "wendy", resourceAttributes = { verb = "get", group = "example.com", resource = "widgets" } }
      assert.same({ allowed = false }, sar(sim, spec))
      local part = role(nil, "widgets-get", { { apiGroups = { "example.com" }, resources = { "widgets" },
        verbs = { "get" } } }, "ClusterRole")
      part.metadata.labels = { ["example.com/widgets"] = "true", ["rbac.authorization.k8s.io/aggregate-to-view"] = "true" }
      create(sim, RBAC .. "clusterroles", part)
      assert.is_true(sar(sim, spec).allowed)
      -- and into the built-in view role, bound here in one namespace
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "v", "ClusterRole", "view",
        { { kind = "User", name = "vic" } }))
      local st = sar(sim, { user = "vic", resourceAttributes = { verb = "get", group = "example.com",
        resource = "widgets", namespace = "default" } })
      assert.same({ allowed = true, reason = 'RBAC: allowed by RoleBinding "v/default" of ClusterRole "view" to User "vic"' },
        st)
      assert.equal(200, (http(sim, "DELETE", RBAC .. "clusterroles/widgets-get")))
      assert.same({ allowed = false }, sar(sim, spec))
    end)

    it("authorizes watches and lists, and answers a missing role with the resolver's error", function()
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "dangling", "ClusterRole", "gone",
        { { kind = "User", name = "una" } }))
      local code, body = http(sim, "GET", "/api/v1/namespaces/default/pods?watch=1", { token = sim:token("una") })
      assert.equal(403, code)
      assert.equal('pods is forbidden: User "una" cannot watch resource "pods" in API group "" in the namespace '
        .. '"default": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found', body.message)
      create(sim, RBAC .. "clusterroles", role(nil, "gone", { { apiGroups = { "" }, resources = { "pods" },
        verbs = { "watch" } } }, "ClusterRole"))
      code = http(sim, "GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1", { token = sim:token("una") })
      assert.equal(200, code)
      assert.equal(403, (http(sim, "GET", "/api/v1/namespaces/default/pods", { token = sim:token("una") })))
    end)

    it("impersonates (Impersonate-User, -Group) when the user may, and makes ServiceAccount tokens", function()
      local whoami = { apiVersion = "authentication.k8s.io/v1", kind = "SelfSubjectReview" }
      local ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
      -- the sim's anonymous user (system:masters) may impersonate anyone
      local code, body = http(sim, "POST", ssr, { body = whoami, headers = { "Impersonate-User: bob",
        "Impersonate-Group: team", "Impersonate-Group: qa" } })
      assert.equal(201, code)
      assert.same({ username = "bob", groups = { "team", "qa", "system:authenticated" } }, body.status.userInfo)
      code, body = http(sim, "POST", ssr, { body = whoami,
        headers = { "Impersonate-User: system:serviceaccount:ci:builder" } })
      assert.equal(201, code)
      assert.same({ "system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated" },
        body.status.userInfo.groups)
      code, body = http(sim, "GET", "/api/v1/pods", { headers = { "Impersonate-User: bob" } })
      assert.equal(403, code)
      assert.equal('pods is forbidden: User "bob" cannot list resource "pods" in API group "" at the cluster scope',
        body.message)
      -- eve may not, until a role grants impersonate on users named bob
      code, body = http(sim, "GET", "/api/v1/pods", { token = sim:token("eve"), headers = { "Impersonate-User: bob" } })
      assert.equal(403, code)
      assert.equal('users "bob" is forbidden: User "eve" cannot impersonate resource "users" in API group "" '
        .. 'at the cluster scope', body.message)
      create(sim, RBAC .. "clusterroles", role(nil, "as-bob", { { apiGroups = { "" }, resources = { "users" },
        resourceNames = { "bob" }, verbs = { "impersonate" } } }, "ClusterRole"))
      create(sim, RBAC .. "clusterrolebindings", binding(nil, "eve-as-bob", "ClusterRole", "as-bob",
        { { kind = "User", name = "eve" } }))
      code, body = http(sim, "POST", ssr, { token = sim:token("eve"), body = whoami,
        headers = { "Impersonate-User: bob" } })
      assert.equal(201, code)
      assert.equal("bob", body.status.userInfo.username)
      code, body = http(sim, "POST", ssr, { token = sim:token("eve"), body = whoami,
        headers = { "Impersonate-User: bob", "Impersonate-Group: system:masters" } })
      assert.equal(403, code)
      assert.equal('groups "system:masters" is forbidden: User "eve" cannot impersonate resource "groups" in API '
        .. 'group "" at the cluster scope', body.message)
      -- TokenRequest: a token of the ServiceAccount, once it exists
      code = http(sim, "POST", "/api/v1/namespaces/default/serviceaccounts/ci/token", { body = "{}" })
      assert.equal(404, code)
      create(sim, "/api/v1/namespaces/default/serviceaccounts",
        { apiVersion = "v1", kind = "ServiceAccount", metadata = { name = "ci" } })
      code, body = http(sim, "POST", "/api/v1/namespaces/default/serviceaccounts/ci/token",
        { body = { apiVersion = "authentication.k8s.io/v1", kind = "TokenRequest", spec = { expirationSeconds = 600 } } })
      assert.equal(201, code)
      assert.equal("TokenRequest", body.kind)
      assert.equal(600, body.spec.expirationSeconds)
      assert.equal(sim:token("system:serviceaccount:default:ci"), body.status.token)
      code, body = http(sim, "POST", ssr, { token = body.status.token, body = whoami })
      assert.equal(201, code)
      assert.equal("system:serviceaccount:default:ci", body.status.userInfo.username)
    end)

    it("lets a user grant more than it holds with escalate and bind", function()
      create(sim, RBAC .. "clusterroles", role(nil, "rbac-admin", {
        { apiGroups = { "rbac.authorization.k8s.io" }, resources = { "roles", "rolebindings" },
          verbs = { "create", "patch" } },
      }, "ClusterRole"))
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "ria", "ClusterRole", "rbac-admin",
        { { kind = "User", name = "ria" } }))
      local t = sim:token("ria")
      local big = role(nil, "big", { { apiGroups = { "" }, resources = { "secrets" }, verbs = { "*" } } })
      local code, body = http(sim, "POST", RBAC .. "namespaces/default/roles", { token = t, body = big })
      assert.equal(403, code)
      assert.equal('roles.rbac.authorization.k8s.io "big" is forbidden: user "ria" (groups=["system:authenticated"]) '
        .. 'is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], '
        .. 'Verbs:["*"]}', body.message)
      local bind = binding(nil, "to-admin", "ClusterRole", "admin", { { kind = "User", name = "x" } })
      bind.kind, bind.metadata.namespace = "RoleBinding", nil
      assert.equal(403, (http(sim, "POST", RBAC .. "namespaces/default/rolebindings", { token = t, body = bind })))
      -- a patch is checked on the object it would store
      create(sim, RBAC .. "namespaces/default/roles", role("default", "small", {}))
      code = http(sim, "PATCH", RBAC .. "namespaces/default/roles/small", { token = t,
        content_type = "application/merge-patch+json", body = { metadata = { labels = { a = "b" } } } })
      assert.equal(200, code)
      code, body = http(sim, "PATCH", RBAC .. "namespaces/default/roles/small", { token = t,
        content_type = "application/merge-patch+json",
        body = { rules = { { apiGroups = { "" }, resources = { "secrets" }, verbs = { "get" } } } } })
      assert.equal(403, code)
      assert.matches('is attempting to grant RBAC permissions not currently held:\n{APIGroups:%[""%], '
        .. 'Resources:%["secrets"%], Verbs:%["get"%]}$', body.message)
      create(sim, RBAC .. "clusterroles", role(nil, "escalator", {
        { apiGroups = { "rbac.authorization.k8s.io" }, resources = { "roles" }, verbs = { "escalate" } },
        { apiGroups = { "rbac.authorization.k8s.io" }, resources = { "clusterroles" }, resourceNames = { "admin" },
          verbs = { "bind" } },
      }, "ClusterRole"))
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "ria-esc", "ClusterRole", "escalator",
        { { kind = "User", name = "ria" } }))
      assert.equal(201, (http(sim, "POST", RBAC .. "namespaces/default/roles", { token = t, body = big })))
      assert.equal(201, (http(sim, "POST", RBAC .. "namespaces/default/rolebindings", { token = t, body = bind })))
    end)

    it("lists a user's rules (SelfSubjectRulesReview), with the errors", function()
      create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "b", "Role", "absent",
        { { kind = "User", name = "rae" } }))
      local code, body = http(sim, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        { token = sim:token("rae"), body = { apiVersion = "authorization.k8s.io/v1", kind = "SelfSubjectRulesReview",
          spec = { namespace = "default" } } })
      assert.equal(201, code)
      assert.equal('role.rbac.authorization.k8s.io "absent" not found', body.status.evaluationError)
      -- system:discovery and system:public-info-viewer (service accounts also
      -- get system:service-account-issuer-discovery's)
      assert.equal(2, #body.status.nonResourceRules)
      -- system:masters: the privileged group's wildcard first
      code, body = http(sim, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        { body = { apiVersion = "authorization.k8s.io/v1", kind = "SelfSubjectRulesReview",
          spec = { namespace = "default" } } })
      assert.equal(201, code)
      assert.same({ verbs = { "*" }, apiGroups = { "*" }, resources = { "*" } }, body.status.resourceRules[1])
    end)
  end)

  it("authorizes client certificates by CN and O (system:masters or RBAC)", function()
    local sim = assert(simmod.start{ tls_cert = F .. "sim_tls.crt", tls_key = F .. "sim_tls.key",
      client_ca = F .. "sim_rbac_client_ca.crt", token = "root", authorization = "rbac" })
    local code, body = http(sim, "GET", "/api/v1/namespaces/default/configmaps", { cert = "sim_client_bob" })
    assert.equal(403, code)
    assert.equal('configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" '
      .. 'in the namespace "default"', body.message)
    -- the config's token is kinformer-sim, in system:masters
    create(sim, RBAC .. "namespaces/default/rolebindings", binding("default", "devs", "ClusterRole", "edit",
      { { kind = "Group", name = "devs" } }), "root")
    assert.equal(200, (http(sim, "GET", "/api/v1/namespaces/default/configmaps", { cert = "sim_client_bob" })))
    code, body = http(sim, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      { token = "root", body = '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' })
    assert.equal(201, code)
    assert.same({ "system:masters", "system:authenticated" }, body.status.userInfo.groups)
    -- unauthenticated: the health checks (system:public-info-viewer) only
    assert.equal(200, (http(sim, "GET", "/healthz")))
    assert.equal(401, (http(sim, "GET", "/api")))
    sim:stop()
  end)
end)
