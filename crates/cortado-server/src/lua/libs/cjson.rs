//! `cjson`: lua-cjson's `encode`, `decode` and `null`, as Redis 7.0 ships them.
//!
//! `encode` writes numbers as `%.14g`, escapes `"`, `\`, `/` and control characters, writes a
//! table whose keys are all positive integers as an array (holes as `null`; refused as
//! "excessively sparse" past twice its entries and 10) and any other as an object, and
//! refuses functions, NaN and infinities with lua-cjson's errors.
//!
//! `decode` reads JSON as lua-cjson does, not as strict JSON: a token at a time (its names
//! appear in the errors: `Expected comma or array end but found T_END at character 5`), numbers
//! as C's `strtod` reads them (so `0x10`, `inf`, `nan` and leading zeros are numbers: Redis
//! builds lua-cjson with `decode_invalid_numbers` on), strings as bytes (no UTF-8 check, control
//! characters kept, a NUL byte ending the text as in C), `\u` escapes as UTF-8 with surrogate
//! pairs joined, and at most 1,000 nested arrays and objects.

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use super::{as_number, check_string, format_g14, lib_error, type_name};

/// How deep tables may nest (lua-cjson's default `encode_max_depth` and `decode_max_depth`).
const MAX_DEPTH: usize = 1000;

/// `cjson.null`: a light userdata holding a null pointer, as lua-cjson's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The `cjson` table.
pub fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "encode",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(lib_error(
                    lua,
                    "bad argument #1 to 'encode' (expected 1 argument)",
                ));
            }
            let mut out = Vec::new();
            encode(&args[0], &mut out, 0).map_err(|e| lib_error(lua, e))?;
            lua.create_string(out)
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(|lua, args: MultiValue| {
            let text = check_string(lua, &args, 1, "decode")?;
            Decoder::new(lua, &text).decode()
        })?,
    )?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// Writes `value` as JSON, or lua-cjson's error.
fn encode(value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(value).expect("a number");
            if !n.is_finite() {
                return Err("Cannot serialise number: must not be NaN or Inf".into());
            }
            out.extend_from_slice(format_g14(n).as_bytes());
        }
        Value::String(s) => escape(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return Err(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                ));
            }
            encode_table(t, out, depth + 1)?;
        }
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            ))
        }
    }
    Ok(())
}

/// The length of `t` as an array (its largest key), or `None` if a key is not a positive
/// integer; lua-cjson's sparse-array error.
fn array_length(t: &Table) -> Result<Option<usize>, String> {
    let (mut max, mut items) = (0usize, 0usize);
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        match as_number(&key) {
            Some(k) if k >= 1.0 && k.fract() == 0.0 && k < 1e15 => {
                max = max.max(k as usize);
                items += 1;
            }
            _ => return Ok(None),
        }
    }
    if max > items * 2 && max > 10 {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    Ok((items > 0).then_some(max))
}

fn encode_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if let Some(len) = array_length(t)? {
        out.push(b'[');
        for i in 1..=len {
            if i > 1 {
                out.push(b',');
            }
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode(&v, out, depth)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    let mut first = true;
    for pair in t.pairs::<Value, Value>() {
        let (key, v) = pair.map_err(|e| e.to_string())?;
        if !first {
            out.push(b',');
        }
        first = false;
        match &key {
            Value::String(s) => escape(&s.as_bytes(), out),
            Value::Integer(_) | Value::Number(_) => {
                let n = as_number(&key).expect("a number");
                escape(format_g14(n).as_bytes(), out);
            }
            _ => return Err("Cannot serialise table: table key must be a number or string".into()),
        }
        out.push(b':');
        encode(&v, out, depth)?;
    }
    out.push(b'}');
    Ok(())
}

/// A JSON string of `bytes`, escaped as lua-cjson escapes (bytes past ASCII as they are).
fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// A lua-cjson token: what `decode` reads next.
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// What lua-cjson says it found instead of a token.
    Error(&'static str),
}

impl Token {
    /// The token's name in lua-cjson's errors.
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(what) => what,
        }
    }
}

/// `cjson.decode` of one text. See the [module docs](self).
struct Decoder<'a> {
    lua: &'a Lua,
    text: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Decoder<'a> {
    fn new(lua: &'a Lua, text: &'a [u8]) -> Self {
        // A NUL byte ends the text, as it ends lua-cjson's C string.
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        Self {
            lua,
            text: &text[..end],
            at: 0,
            depth: 0,
        }
    }

    fn decode(mut self) -> mlua::Result<Value> {
        let (token, at) = self.next_token();
        let value = self.value(token, at)?;
        match self.next_token() {
            (Token::End, _) => Ok(value),
            (token, at) => Err(self.expected("the end", &token, at)),
        }
    }

    /// lua-cjson's error for `found` (at byte `at`) where `what` was expected.
    fn expected(&self, what: &str, found: &Token, at: usize) -> mlua::Error {
        lib_error(
            self.lua,
            format!(
                "Expected {what} but found {} at character {}",
                found.name(),
                at + 1
            ),
        )
    }

    fn value(&mut self, token: Token, at: usize) -> mlua::Result<Value> {
        Ok(match token {
            Token::Str(bytes) => Value::String(self.lua.create_string(bytes)?),
            Token::Num(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => null(),
            Token::ObjBegin => self.object(at)?,
            Token::ArrBegin => self.array(at)?,
            other => return Err(self.expected("value", &other, at)),
        })
    }

    /// One level deeper, at the token at byte `at`; lua-cjson's error past 1,000.
    fn descend(&mut self, at: usize) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(lib_error(
                self.lua,
                format!(
                    "Found too many nested data structures ({}) at character {}",
                    self.depth,
                    at + 1
                ),
            ));
        }
        Ok(())
    }

    fn object(&mut self, at: usize) -> mlua::Result<Value> {
        self.descend(at)?;
        let table = self.lua.create_table()?;
        let (mut token, mut at) = self.next_token();
        if !matches!(token, Token::ObjEnd) {
            loop {
                let Token::Str(key) = token else {
                    return Err(self.expected("object key string", &token, at));
                };
                let (colon, colon_at) = self.next_token();
                if !matches!(colon, Token::Colon) {
                    return Err(self.expected("colon", &colon, colon_at));
                }
                let (token_v, at_v) = self.next_token();
                let value = self.value(token_v, at_v)?;
                table.raw_set(self.lua.create_string(key)?, value)?;
                (token, at) = self.next_token();
                match token {
                    Token::ObjEnd => break,
                    Token::Comma => (token, at) = self.next_token(),
                    other => return Err(self.expected("comma or object end", &other, at)),
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Table(table))
    }

    fn array(&mut self, at: usize) -> mlua::Result<Value> {
        self.descend(at)?;
        let table = self.lua.create_table()?;
        let (mut token, mut at) = self.next_token();
        if !matches!(token, Token::ArrEnd) {
            let mut i = 1;
            loop {
                let value = self.value(token, at)?;
                table.raw_set(i, value)?;
                i += 1;
                (token, at) = self.next_token();
                match token {
                    Token::ArrEnd => break,
                    Token::Comma => (token, at) = self.next_token(),
                    other => return Err(self.expected("comma or array end", &other, at)),
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Table(table))
    }

    /// The next token and the byte it starts at (for an error, the byte at fault).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.text.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
        let at = self.at;
        let rest = &self.text[at..];
        let Some(&first) = rest.first() else {
            return (Token::End, at);
        };
        let single = match first {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(token) = single {
            self.at += 1;
            return (token, at);
        }
        if first == b'"' {
            return self.string(at);
        }
        if first == b'-' || first.is_ascii_digit() {
            return self.number(at);
        }
        for (word, token) in [
            (&b"true"[..], Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                return (token, at);
            }
        }
        if looks_invalid_number(rest) {
            return self.number(at);
        }
        (Token::Error("invalid token"), at)
    }

    fn number(&mut self, at: usize) -> (Token, usize) {
        match strtod_prefix(&self.text[at..]) {
            Some((n, len)) => {
                self.at += len;
                (Token::Num(n), at)
            }
            None => (Token::Error("invalid number"), at),
        }
    }

    /// A string token from the `"` at byte `at`; errors name the byte at fault.
    fn string(&mut self, at: usize) -> (Token, usize) {
        let text = self.text;
        let mut out = Vec::new();
        let mut i = at + 1;
        loop {
            let Some(&b) = text.get(i) else {
                return (Token::Error("unexpected end of string"), i);
            };
            match b {
                b'"' => break,
                b'\\' => {
                    let plain = match text.get(i + 1) {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => match unicode_escape(&text[i..]) {
                            Some((c, len)) => {
                                let mut utf8 = [0; 4];
                                out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                                i += len;
                                continue;
                            }
                            None => return (Token::Error("invalid unicode escape code"), i),
                        },
                        _ => return (Token::Error("invalid escape code"), i),
                    };
                    out.push(plain);
                    i += 2;
                }
                _ => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        self.at = i + 1;
        (Token::Str(out), at)
    }
}

/// The character of the `\uXXXX` escape (with its low surrogate's `\uXXXX`, for a high
/// one) at the start of `s`, and the bytes it took; `None` if malformed or unpaired.
fn unicode_escape(s: &[u8]) -> Option<(char, usize)> {
    let hex4 = |s: &[u8]| -> Option<u32> {
        let digits = s.get(2..6)?;
        if s.get(..2)? != b"\\u" || !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let high = hex4(s)?;
    match high {
        0xd800..=0xdbff => {
            let low = hex4(s.get(6..)?)?;
            if !(0xdc00..=0xdfff).contains(&low) {
                return None;
            }
            let c = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
            Some((char::from_u32(c)?, 12))
        }
        0xdc00..=0xdfff => None,
        _ => Some((char::from_u32(high)?, 6)),
    }
}

/// Whether `s` starts as lua-cjson's "invalid numbers" do, which it reads as numbers too:
/// hexadecimal, `inf`, `nan` or a leading zero before a digit, after an optional `-`.
fn looks_invalid_number(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"-").unwrap_or(s);
    let lower: Vec<u8> = s.iter().take(3).map(u8::to_ascii_lowercase).collect();
    matches!(lower.as_slice(), [b'0', b'x', ..] | [b'0', b'0'..=b'9', ..])
        || lower == b"inf"
        || lower == b"nan"
}

/// The number C's `strtod` reads at the start of `s`, and its length; `None` if it reads
/// none. Decimal and hexadecimal forms, `inf`, `infinity` and `nan`, any letter case.
fn strtod_prefix(s: &[u8]) -> Option<(f64, usize)> {
    let sign_len = usize::from(matches!(s.first(), Some(b'-' | b'+')));
    let negative = s.first() == Some(&b'-');
    let rest = &s[sign_len..];
    let starts =
        |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    let signed = |n: f64| if negative { -n } else { n };
    if starts(b"infinity") {
        return Some((signed(f64::INFINITY), sign_len + 8));
    }
    if starts(b"inf") {
        return Some((signed(f64::INFINITY), sign_len + 3));
    }
    if starts(b"nan") {
        let mut len = sign_len + 3;
        if s.get(len) == Some(&b'(') {
            let inner = s[len + 1..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if s.get(len + 1 + inner) == Some(&b')') {
                len += inner + 2;
            }
        }
        return Some((f64::NAN, len));
    }
    let digits = |from: usize, hex: bool| {
        s[from..]
            .iter()
            .take_while(|b| {
                if hex {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count()
    };
    // Hexadecimal: `0x`, digits, an optional fraction, an optional binary exponent.
    if starts(b"0x") {
        let mut i = sign_len + 2;
        let whole = digits(i, true);
        let mut value = 0f64;
        for &d in &s[i..i + whole] {
            value = value * 16.0 + f64::from((d as char).to_digit(16).unwrap_or(0));
        }
        i += whole;
        let mut fraction = 0;
        if s.get(i) == Some(&b'.') {
            fraction = digits(i + 1, true);
            let mut scale = 1.0 / 16.0;
            for &d in &s[i + 1..i + 1 + fraction] {
                value += f64::from((d as char).to_digit(16).unwrap_or(0)) * scale;
                scale /= 16.0;
            }
            if whole + fraction > 0 {
                i += 1 + fraction;
            }
        }
        if whole + fraction == 0 {
            // `0x` with no digit: the `0` alone.
            return Some((signed(0.0), sign_len + 1));
        }
        if matches!(s.get(i), Some(b'p' | b'P')) {
            let exp_sign = usize::from(matches!(s.get(i + 1), Some(b'-' | b'+')));
            let exp_digits = digits(i + 1 + exp_sign, false);
            if exp_digits > 0 {
                let text = std::str::from_utf8(&s[i + 1..i + 1 + exp_sign + exp_digits]).ok()?;
                let exp: i32 = text.parse().unwrap_or(if text.starts_with('-') {
                    i32::MIN
                } else {
                    i32::MAX
                });
                value *= 2f64.powi(exp);
                i += 1 + exp_sign + exp_digits;
            }
        }
        return Some((signed(value), i));
    }
    // Decimal: digits, an optional fraction, an optional exponent; a digit at least.
    let mut i = sign_len;
    let whole = digits(i, false);
    i += whole;
    let mut fraction = 0;
    if s.get(i) == Some(&b'.') {
        fraction = digits(i + 1, false);
        if whole + fraction > 0 {
            i += 1 + fraction;
        }
    }
    if whole + fraction == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let exp_sign = usize::from(matches!(s.get(i + 1), Some(b'-' | b'+')));
        let exp_digits = digits(i + 1 + exp_sign, false);
        if exp_digits > 0 {
            i += 1 + exp_sign + exp_digits;
        }
    }
    let text = std::str::from_utf8(&s[sign_len..i]).ok()?;
    Some((signed(text.parse().ok()?), i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(lua: &Lua, code: &str) -> String {
        let v: Value = lua.load(code).eval().unwrap();
        let mut out = Vec::new();
        match encode(&v, &mut out, 0) {
            Ok(()) => String::from_utf8(out).unwrap(),
            Err(e) => e,
        }
    }

    #[test]
    fn strtod_prefix_reads_what_c_reads() {
        assert_eq!(strtod_prefix(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod_prefix(b"1.5e+2x"), Some((150.0, 6)));
        assert_eq!(strtod_prefix(b"12."), Some((12.0, 3)));
        assert_eq!(strtod_prefix(b"0x"), Some((0.0, 1)));
        assert_eq!(strtod_prefix(b"0x1p4"), Some((16.0, 5)));
        assert_eq!(strtod_prefix(b"-0X.8"), Some((-0.5, 5)));
        assert_eq!(strtod_prefix(b"-Infinity"), Some((f64::NEG_INFINITY, 9)));
        assert_eq!(strtod_prefix(b"infx"), Some((f64::INFINITY, 3)));
        let (nan, len) = strtod_prefix(b"nan(q1)]").unwrap();
        assert!(nan.is_nan() && len == 7);
        assert_eq!(strtod_prefix(b"-"), None);
        assert_eq!(strtod_prefix(b"-x"), None);
    }

    fn decoded(lua: &Lua, json: &[u8]) -> Result<Value, String> {
        Decoder::new(lua, json).decode().map_err(|e| e.to_string())
    }

    #[test]
    fn decode_errors_name_lua_cjson_tokens_and_characters() {
        let lua = Lua::new();
        let cases: [(&[u8], &str); 8] = [
            (
                b"[1,2",
                "Expected comma or array end but found T_END at character 5",
            ),
            (
                b"{\"a\" 1}",
                "Expected colon but found T_NUMBER at character 6",
            ),
            (
                b"{1:2}",
                "Expected object key string but found T_NUMBER at character 2",
            ),
            (
                b"[1] x",
                "Expected the end but found invalid token at character 5",
            ),
            (
                b"\"a\\qb\"",
                "Expected value but found invalid escape code at character 3",
            ),
            (
                b"\"\\ud800\"",
                "found invalid unicode escape code at character 2",
            ),
            (b"\"abc", "found unexpected end of string at character 5"),
            (
                b"-",
                "Expected value but found invalid number at character 1",
            ),
        ];
        for (json, error) in cases {
            let got = decoded(&lua, json).unwrap_err();
            assert!(
                got.contains(error),
                "{}: {got}",
                String::from_utf8_lossy(json)
            );
        }
        let deep = "[".repeat(1001);
        let got = decoded(&lua, deep.as_bytes()).unwrap_err();
        assert!(got.contains("Found too many nested data structures (1001) at character 1001"));
    }

    #[test]
    fn decode_keeps_bytes_joins_surrogates_and_stops_at_nul() {
        let lua = Lua::new();
        let text = |json: &[u8]| match decoded(&lua, json).unwrap() {
            Value::String(s) => s.as_bytes().to_vec(),
            other => panic!("{other:?}"),
        };
        assert_eq!(text(b"\"\xff\x01\""), b"\xff\x01");
        assert_eq!(text(b"\"\\ud83d\\ude00\""), "\u{1f600}".as_bytes());
        assert_eq!(text(b"\"\\/\\t\"\0junk"), b"/\t");
    }

    #[test]
    fn encode_matches_lua_cjson() {
        let lua = Lua::new();
        assert_eq!(encoded(&lua, "return {1, 2, 3}"), "[1,2,3]");
        assert_eq!(encoded(&lua, "return {a = 1}"), "{\"a\":1}");
        assert_eq!(encoded(&lua, "return 'he\"l/lo\\n'"), "\"he\\\"l\\/lo\\n\"");
        assert_eq!(encoded(&lua, "return {}"), "{}");
        assert_eq!(encoded(&lua, "return {[1] = 1, [3] = 3}"), "[1,null,3]");
        assert_eq!(
            encoded(&lua, "return {[1] = 1, [30] = 3}"),
            "Cannot serialise table: excessively sparse array"
        );
        assert_eq!(encoded(&lua, "return 2^53"), "9.007199254741e+15");
        assert_eq!(
            encoded(&lua, "return 1/0"),
            "Cannot serialise number: must not be NaN or Inf"
        );
        assert_eq!(
            encoded(&lua, "return print"),
            "Cannot serialise function: type not supported"
        );
    }
}
