//! Redis 7 functions: libraries of named Lua functions, loaded with `FUNCTION LOAD` from code
//! that starts with a `#!lua name=<library>` line and calls `redis.register_function`.
//!
//! [`Libraries`] keeps every library's code and functions; [`Libraries::load`] parses the
//! shebang, compiles and runs the code in the engine's library environment (see `setup.lua`),
//! and adds the library unless a name collides. `FUNCTION DUMP` writes Redis's payload
//! ([`dump`]): for each library an RDB `FUNCTION2` record of its code, then the RDB version and
//! a CRC64, which `FUNCTION RESTORE` here and on Redis 7.0 both read ([`undump`] reads Redis's
//! LZF-compressed strings too).
//!
//! # Design
//!
//! - **Flags** are bits ([`flag`]), listed in Redis's order by `FUNCTION LIST`.
//! - **A load is all or nothing**: the library is compiled and registered first, and only
//!   then are the collisions checked and the maps changed; `FUNCTION RESTORE` works on a copy
//!   of the maps (the compiled functions are handles, cheap to copy) and keeps it only if
//!   every library loaded.

use std::collections::BTreeMap;

use mlua::{ChunkMode, Function, Lua, Table};

/// The function flags, as bits.
pub mod flag {
    /// The function writes nothing (`FCALL_RO` may call it).
    pub const NO_WRITES: u8 = 1;
    /// Commands that may grow memory are allowed over `maxmemory`.
    pub const ALLOW_OOM: u8 = 2;
    /// Allowed on a stale replica (accepted: Cortado has no replicas).
    pub const ALLOW_STALE: u8 = 4;
    /// Refused in cluster mode (accepted: Cortado has no cluster).
    pub const NO_CLUSTER: u8 = 8;
    /// May touch keys of several slots (accepted: Cortado has no slots).
    pub const ALLOW_CROSS_SLOT_KEYS: u8 = 16;

    /// Every flag with its name, in the order Redis lists them.
    pub const NAMES: &[(u8, &str)] = &[
        (NO_WRITES, "no-writes"),
        (ALLOW_OOM, "allow-oom"),
        (ALLOW_STALE, "allow-stale"),
        (NO_CLUSTER, "no-cluster"),
        (ALLOW_CROSS_SLOT_KEYS, "allow-cross-slot-keys"),
    ];

    /// The bit of the flag called `name`.
    pub fn parse(name: &[u8]) -> Option<u8> {
        NAMES
            .iter()
            .find(|(_, n)| n.as_bytes() == name)
            .map(|(bit, _)| *bit)
    }
}

/// One registered function.
#[derive(Clone)]
pub struct FunctionDef {
    /// Its name.
    pub name: String,
    /// Its library's name.
    pub library: String,
    /// The Lua function.
    pub callback: Function,
    /// [`flag`] bits.
    pub flags: u8,
    /// `description`, if given.
    pub description: Option<String>,
}

/// One library: its code and its functions' names.
#[derive(Clone)]
pub struct Library {
    /// The code, shebang included.
    pub code: Vec<u8>,
    /// Its functions' names, sorted.
    pub functions: Vec<String>,
}

/// Every library and function. See the [module docs](self).
#[derive(Clone, Default)]
pub struct Libraries {
    /// By name.
    pub libraries: BTreeMap<String, Library>,
    /// By name.
    pub functions: BTreeMap<String, FunctionDef>,
}

/// The error of a library name that is not letters, digits and underscores.
const NAME_RULE: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// The library name of a `#!lua name=<name>` first line, or Redis's error.
pub fn parse_shebang(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let line = String::from_utf8_lossy(&code[..end]);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    if parts.next() != Some("#!lua") {
        return Err("Invalid library metadata".into());
    }
    let mut name = None;
    for part in parts {
        match part.strip_prefix("name=") {
            Some(n) if name.is_none() && !n.is_empty() => name = Some(n.to_owned()),
            _ => return Err("Invalid library metadata".into()),
        }
    }
    let name = name.ok_or_else(|| "Invalid library metadata".to_owned())?;
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(NAME_RULE.into());
    }
    Ok(name)
}

/// `code` with its first line blanked (Lua would read `#!` as a syntax error) but its line
/// break kept, so errors name the lines as the client wrote them.
fn without_shebang(code: &[u8]) -> Vec<u8> {
    let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    code[end..].to_vec()
}

impl Libraries {
    /// The number of functions.
    pub fn function_count(&self) -> usize {
        self.functions.len()
    }

    /// Compiles and registers the library of `code`, replacing one of the same name if
    /// `replace`: its name, or Redis's error (without the `ERR ` code).
    pub fn load(
        &mut self,
        lua: &Lua,
        env: &Table,
        loader: &Function,
        code: &[u8],
        replace: bool,
    ) -> Result<String, String> {
        let name = parse_shebang(code)?;
        if !replace && self.libraries.contains_key(&name) {
            return Err(format!("Library '{name}' already exists"));
        }
        let chunk = lua
            .load(without_shebang(code))
            .set_name("@user_function")
            .set_mode(ChunkMode::Text)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| {
                let message = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                format!("Error compiling function: {message}")
            })?;
        let (functions, error): (Option<Table>, Option<mlua::String>) =
            loader.call(chunk).map_err(|e| e.to_string())?;
        let Some(functions) = functions else {
            let text = error.map(|e| e.to_string_lossy()).unwrap_or_default();
            return Err(format!("Error registering functions: {text}"));
        };
        let mut defs = Vec::new();
        for def in functions.sequence_values::<Table>() {
            let def = def.map_err(|e| e.to_string())?;
            let mut flags = 0;
            for f in def
                .get::<Table>("flags")
                .map_err(|e| e.to_string())?
                .sequence_values::<mlua::String>()
            {
                let f = f.map_err(|e| e.to_string())?;
                flags |= flag::parse(&f.as_bytes()).unwrap_or(0);
            }
            defs.push(FunctionDef {
                name: def.get("name").map_err(|e| e.to_string())?,
                library: name.clone(),
                callback: def.get("callback").map_err(|e| e.to_string())?,
                flags,
                description: def.get("description").map_err(|e| e.to_string())?,
            });
        }
        if defs.is_empty() {
            return Err("No functions registered".into());
        }
        for def in &defs {
            if let Some(existing) = self.functions.get(&def.name) {
                if existing.library != name {
                    return Err(format!("Function {} already exists", def.name));
                }
            }
        }
        self.delete(&name);
        let mut names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        names.sort();
        for def in defs {
            self.functions.insert(def.name.clone(), def);
        }
        self.libraries.insert(
            name.clone(),
            Library {
                code: code.to_vec(),
                functions: names,
            },
        );
        Ok(name)
    }

    /// Adds the libraries of `incoming` (`FUNCTION RESTORE`), in place of those of the same
    /// name if `replace`; Redis's error on a name taken.
    pub fn join(&mut self, incoming: Libraries, replace: bool) -> Result<(), String> {
        for name in incoming.libraries.keys() {
            if self.libraries.contains_key(name) {
                if !replace {
                    return Err(format!("Library {name} already exists"));
                }
                self.delete(name);
            }
        }
        if let Some(taken) = incoming
            .functions
            .keys()
            .find(|f| self.functions.contains_key(*f))
        {
            return Err(format!("Function {taken} already exists"));
        }
        self.libraries.extend(incoming.libraries);
        self.functions.extend(incoming.functions);
        Ok(())
    }

    /// Drops the library `name` and its functions; whether there was one.
    pub fn delete(&mut self, name: &str) -> bool {
        let Some(library) = self.libraries.remove(name) else {
            return false;
        };
        for f in &library.functions {
            self.functions.remove(f);
        }
        true
    }
}

/// The RDB opcode of a function library record (Redis 7.0's `RDB_OPCODE_FUNCTION2`).
const RDB_OPCODE_FUNCTION2: u8 = 0xf5;
/// The RDB version Redis 7.0 writes (and the newest it reads).
const RDB_VERSION: u16 = 10;

/// `FUNCTION DUMP`'s payload of these libraries' codes (see the [module docs](self)).
pub fn dump<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(RDB_OPCODE_FUNCTION2);
        write_length(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The libraries' codes in a `FUNCTION DUMP` payload, or `None` if it is not one (a wrong
/// version or checksum, or a record that is not a library).
pub fn undump(payload: &[u8]) -> Option<Vec<Vec<u8>>> {
    if payload.len() < 10 {
        return None;
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().ok()?);
    if version > RDB_VERSION || crc64(0, &payload[..payload.len() - 8]) != crc {
        return None;
    }
    let mut codes = Vec::new();
    let mut at = 0;
    while at < body.len() {
        if body[at] != RDB_OPCODE_FUNCTION2 {
            return None;
        }
        at += 1;
        codes.push(read_string(body, &mut at)?);
    }
    Some(codes)
}

/// Writes an RDB length.
fn write_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Reads an RDB length: the length, or the special encoding's number (flagged `true`).
fn read_length(bytes: &[u8], at: &mut usize) -> Option<(u64, bool)> {
    let first = *bytes.get(*at)?;
    *at += 1;
    let mut take = |n: usize| -> Option<u64> {
        let part = bytes.get(*at..*at + n)?;
        *at += n;
        Some(part.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
    };
    match first >> 6 {
        0 => Some((u64::from(first & 0x3f), false)),
        1 => Some((u64::from(first & 0x3f) << 8 | take(1)?, false)),
        2 if first == 0x80 => Some((take(4)?, false)),
        2 if first == 0x81 => Some((take(8)?, false)),
        3 => Some((u64::from(first & 0x3f), true)),
        _ => None,
    }
}

/// Reads an RDB string: plain, an integer, or LZF-compressed.
fn read_string(bytes: &[u8], at: &mut usize) -> Option<Vec<u8>> {
    let (len, special) = read_length(bytes, at)?;
    if !special {
        let len = usize::try_from(len).ok()?;
        let s = bytes.get(*at..at.checked_add(len)?)?.to_vec();
        *at += len;
        return Some(s);
    }
    let int = |n: usize, at: &mut usize| -> Option<Vec<u8>> {
        let part = bytes.get(*at..*at + n)?;
        *at += n;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(part);
        let shift = 64 - 8 * n as u32;
        let v = (i64::from_le_bytes(le) << shift) >> shift;
        Some(v.to_string().into_bytes())
    };
    match len {
        0 => int(1, at),
        1 => int(2, at),
        2 => int(4, at),
        3 => {
            let (clen, _) = read_length(bytes, at)?;
            let (ulen, _) = read_length(bytes, at)?;
            let clen = usize::try_from(clen).ok()?;
            let compressed = bytes.get(*at..at.checked_add(clen)?)?;
            *at += clen;
            lzf_decompress(compressed, usize::try_from(ulen).ok()?)
        }
        _ => None,
    }
}

/// LZF decompression (the format of Redis's compressed RDB strings), to exactly `len` bytes.
fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            out.extend_from_slice(input.get(i..i + run)?);
            i += run;
        } else {
            let mut run = ctrl >> 5;
            if run == 7 {
                run += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            for k in 0..run + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
        if out.len() > len {
            return None;
        }
    }
    (out.len() == len).then_some(out)
}

/// Redis's CRC64 (Jones polynomial, reflected, as `crc64.c` computes it).
pub fn crc64(mut crc: u64, bytes: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9, reflected
    for &b in bytes {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_of_check_string_is_redis_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn dump_then_undump_gives_the_codes_back() {
        let long = vec![b'x'; 20_000];
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\n", &long];
        let payload = dump(codes.iter().copied());
        assert_eq!(undump(&payload), Some(vec![codes[0].to_vec(), long]));
        let mut bad = payload.clone();
        bad[3] ^= 1;
        assert_eq!(undump(&bad), None);
        assert_eq!(undump(b"garbage"), None);
    }

    #[test]
    fn undump_reads_redis_lzf_payload() {
        // FUNCTION DUMP of redis-server 7.0.15 for `#!lua name=l2` with one function.
        let payload: &[u8] = b"\xf5\xc3@|@\x89\x1f#!lua name=l2\nredis.register_fun\x05ction{\xc0\x08\x00_`(\r'w', callback=\xc0\x1b\t(k) return \x06@F@!\x1f('set',k[1],'1') end, flags={'no\t-writes'}}\n\x008\x07|R\x8f\xd6\xdc\xae";
        let codes = undump(payload).expect("Redis's payload");
        assert_eq!(
            codes,
            vec![b"#!lua name=l2\nredis.register_function{function_name='w', callback=function(k) return redis.call('set',k[1],'1') end, flags={'no-writes'}}".to_vec()]
        );
    }

    #[test]
    fn parse_shebang_takes_name_and_refuses_the_rest() {
        assert_eq!(parse_shebang(b"#!lua name=ab_1\nx").unwrap(), "ab_1");
        assert_eq!(
            parse_shebang(b"return 1").unwrap_err(),
            "Missing library metadata"
        );
        for bad in [
            &b"#!lua"[..],
            b"#!lua name=",
            b"#!py name=x",
            b"#!lua name=a b=c",
        ] {
            assert_eq!(parse_shebang(bad).unwrap_err(), "Invalid library metadata");
        }
        assert_eq!(parse_shebang(b"#!lua name=a-b").unwrap_err(), NAME_RULE);
    }
}
