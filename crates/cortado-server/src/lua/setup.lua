-- Builds the scripts' sandbox and the `redis` library (see mod.rs). Given the library's Rust
-- functions and the error handler; returns the scripts' environment, the runner and the real
-- `redis` table.
local sha1hex, log, error_reply, setresp, set_repl, handler, check_killed = ...
local G = _G
local error, rawget, select, setmetatable, tostring, type, xpcall =
    error, rawget, select, setmetatable, tostring, type, xpcall
local load, loadstring, setfenv = load, loadstring, setfenv
local pcall = pcall

for _, name in ipairs({ 'print', 'dofile', 'loadfile', 'setfenv', 'getfenv',
    'newproxy', 'module', 'require', 'package', 'os', 'io' }) do
    G[name] = nil
end

local function readonly_error()
    error('Attempt to modify a readonly table', 2)
end

local function readonly(t)
    return setmetatable({}, { __index = t, __newindex = readonly_error, __metatable = false })
end

-- redis.call and redis.pcall are set for each script's run.
local redis = {}
redis.sha1hex = sha1hex
redis.error_reply = error_reply
redis.log = log
redis.setresp = setresp
redis.set_repl = set_repl
redis.status_reply = function(...)
    local s = ...
    if select('#', ...) ~= 1 or type(s) ~= 'string' then
        return { err = 'ERR wrong number or type of arguments' }
    end
    return { ok = s }
end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

G.redis = readonly(redis)
for _, name in ipairs({ 'string', 'math', 'table', 'coroutine' }) do
    G[name] = readonly(G[name])
end

local env = setmetatable({}, {
    __index = function(_, k)
        local v = rawget(G, k)
        if v == nil then
            error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
        end
        return v
    end,
    __newindex = readonly_error,
    __metatable = false,
})
G._G = env

-- Code a script compiles runs in the scripts' environment too, not in the real globals.
local function sandboxed(f, message)
    if f then setfenv(f, env) end
    return f, message
end
G.loadstring = function(...) return sandboxed(loadstring(...)) end
G.load = function(...) return sandboxed(load(...)) end

-- A script stopped by SCRIPT KILL does not catch its own stop: pcall raises it again.
local function unless_killed(ok, ...)
    if not ok then check_killed() end
    return ok, ...
end
G.pcall = function(...) return unless_killed(pcall(...)) end
G.xpcall = function(...) return unless_killed(xpcall(...)) end

local function run(f)
    return xpcall(f, handler)
end

return env, run, redis
