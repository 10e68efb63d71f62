-- Builds the scripts' sandbox and the `redis` library (see mod.rs). Given the library's Rust
-- functions and the error handler; returns the scripts' environment and runner, and the
-- functions' environment, library loader and runner.
local sha1hex, log, error_reply, setresp, set_repl, handler, check_killed, call, pcall_command = ...
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

-- redis.call and redis.pcall run the running script's commands (mod.rs: with_commands).
local redis = {}
redis.call = call
redis.pcall = pcall_command
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
for _, name in ipairs({ 'string', 'math', 'table', 'coroutine', 'bit', 'cjson', 'cmsgpack', 'struct' }) do
    G[name] = readonly(G[name])
end

-- A script reads the real globals through a table `__index` (no Lua call for a global that
-- exists); one that does not exist reaches G's own `__index`, which raises. Level 2 is the
-- script's frame either way: a table `__index` adds no frame.
setmetatable(G, {
    __index = function(_, k)
        error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end,
    __metatable = false,
})
local env = setmetatable({}, {
    __index = G,
    __newindex = readonly_error,
    __metatable = false,
})
G._G = env

-- KEYS and ARGV: the same two tables every run. The engine sets entries 1 to n before a
-- run (n_keys, n_argv); the runner then makes sure they hold nothing else (a longer previous
-- run, keys a script added): n keys counted means exactly 1 to n, which are all set. Not
-- emptied after a run: its reply may be these very tables.
local keys, argv = {}, {}
G.KEYS, G.ARGV = keys, argv
local next = next
local function trim(t, n)
    local count = 0
    for _ in next, t do count = count + 1 end
    if count == n then return end
    local kept = {}
    for i = 1, n do kept[i] = t[i] end
    for k in next, t do t[k] = nil end
    for i = 1, n do t[i] = kept[i] end
end

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

-- Runs a script's chunk through the error handler, KEYS and ARGV trimmed to their first
-- n_keys and n_argv entries (the engine's).
local function run(f, n_keys, n_argv)
    trim(keys, n_keys)
    trim(argv, n_argv)
    return xpcall(f, handler)
end

-- Runs a function f(keys, args) through the error handler. Lua 5.1's xpcall passes no
-- arguments: they wait in upvalues.
local current, first, second
local function call_current()
    return current(first, second)
end
local function run_function(f, a, b)
    current, first, second = f, a, b
    local ok, value = xpcall(call_current, handler)
    current, first, second = nil, nil, nil
    return ok, value
end

-- Redis 7 functions. A library's code runs once at FUNCTION LOAD, in an environment where
-- `redis` is the loading API (register_function, log); its functions run later in the same
-- environment, where `redis` is then the scripts' library. KEYS and ARGV are not globals of
-- functions: they get their keys and arguments as parameters.
local registering -- the library being loaded: its functions, in order; nil otherwise
local function fail(message) error({ err = 'ERR ' .. message }) end
local known_flags = {
    ['no-writes'] = true, ['allow-oom'] = true, ['allow-stale'] = true,
    ['no-cluster'] = true, ['allow-cross-slot-keys'] = true,
}
local NAME_RULE =
    'Library names can only contain letters, numbers, or underscores(_) and must be at least one character long'

local function register_function(...)
    local n = select('#', ...)
    local name, callback, flags, description
    if n == 1 then
        local args = ...
        if type(args) ~= 'table' then
            fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
        end
        for k, v in G.pairs(args) do
            if k == 'function_name' then
                if type(v) ~= 'string' and type(v) ~= 'number' then
                    fail('function_name argument given to redis.register_function must be a string')
                end
                name = tostring(v)
            elseif k == 'callback' then
                if type(v) ~= 'function' then
                    fail('callback argument given to redis.register_function must be a function')
                end
                callback = v
            elseif k == 'flags' then
                if type(v) ~= 'table' then
                    fail('flags argument to redis.register_function must be a table representing function flags')
                end
                flags = v
            elseif k == 'description' then
                if type(v) ~= 'string' and type(v) ~= 'number' then
                    fail('description argument given to redis.register_function must be a string')
                end
                description = tostring(v)
            else
                fail('unknown argument given to redis.register_function')
            end
        end
        if name == nil then fail('redis.register_function must get a function name argument') end
        if callback == nil then fail('redis.register_function must get a callback argument') end
    elseif n == 2 then
        name, callback = ...
        if type(name) ~= 'string' then fail('first argument to redis.register_function must be a string') end
        if type(callback) ~= 'function' then
            fail('second argument to redis.register_function must be a function')
        end
    else
        fail('wrong number of arguments to redis.register_function')
    end
    if not name:find('^[%w_]+$') then fail(NAME_RULE) end
    local names = {}
    for _, flag in G.ipairs(flags or {}) do
        if type(flag) ~= 'string' or not known_flags[flag] then fail('unknown flag given') end
        names[#names + 1] = flag
    end
    for _, f in G.ipairs(registering) do
        if f.name == name then fail('Function already exists in the library') end
    end
    registering[#registering + 1] = {
        name = name, callback = callback, flags = names, description = description,
    }
end

local loading_api = {
    register_function = register_function,
    log = log,
    LOG_DEBUG = redis.LOG_DEBUG, LOG_VERBOSE = redis.LOG_VERBOSE,
    LOG_NOTICE = redis.LOG_NOTICE, LOG_WARNING = redis.LOG_WARNING,
}
local loading_redis = setmetatable({}, {
    __index = function(_, k)
        local v = loading_api[k]
        if v == nil then
            error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
        end
        return v
    end,
    __newindex = readonly_error,
    __metatable = false,
})

local library_env = setmetatable({}, {
    __index = function(_, k)
        if k == 'redis' and registering then return loading_redis end
        local v = k ~= 'KEYS' and k ~= 'ARGV' and rawget(G, k) or nil
        if v == nil then
            error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
        end
        return v
    end,
    __newindex = readonly_error,
    __metatable = false,
})

-- Runs a library's compiled code: its functions, or the text of its error.
local function load_library(chunk)
    registering = {}
    local ok, err = xpcall(chunk, handler)
    local functions = registering
    registering = nil
    if ok then return functions end
    return nil, err.err
end

return env, run, library_env, load_library, run_function, keys, argv
