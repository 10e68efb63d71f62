//! A command's syntax, written as one line of our own notation and given to clients as the
//! `arguments` of `COMMAND DOCS` (which `redis-cli` turns into its usage lines and hints).
//!
//! The notation is the usual usage line with two additions, types and names of groups:
//!
//! - `name` is a string argument and `name:type` one of another type (`key`, `integer`,
//!   `double`, `pattern`, `unix-time`); a word in capitals is a token (`NX`).
//! - `[...]` is optional, `(...)` required, `a|b` one of several, and `...` after an
//!   element lets it repeat.
//! - A group beginning with a token belongs to that token: `[EX seconds:integer]` is one
//!   argument `seconds` introduced by `EX`, and `[AUTH username password]` a block `auth`
//!   introduced by `AUTH`. Any other group of several elements or alternatives needs a
//!   name: `condition=[NX|XX]`, `data=(key:key value)...`.
//!
//! So `SET`'s syntax reads `key:key value condition=[NX|XX] [GET] expiration=[EX
//! seconds:integer|...|KEEPTTL]`, and `redis-cli` shows it as `key value [NX|XX] [GET] [EX
//! seconds|...|KEEPTTL]`.
//!
//! # Design
//!
//! The syntax is parsed when `COMMAND DOCS` is asked, which is rare (a client's start), so
//! the table holds one short string per command instead of a tree of constants; a unit test
//! parses every command's syntax, so a mistake fails the build's tests rather than a client.

use crate::protocol::Reply;

/// What an argument is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Key,
    String,
    Integer,
    Double,
    Pattern,
    UnixTime,
    /// A token standing alone (`NX`).
    PureToken,
    /// One of these.
    OneOf(Vec<Arg>),
    /// All of these, in order.
    Block(Vec<Arg>),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Key => "key",
            Kind::String => "string",
            Kind::Integer => "integer",
            Kind::Double => "double",
            Kind::Pattern => "pattern",
            Kind::UnixTime => "unix-time",
            Kind::PureToken => "pure-token",
            Kind::OneOf(_) => "oneof",
            Kind::Block(_) => "block",
        }
    }
}

/// One argument of a command's syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub kind: Kind,
    /// The token introducing it (`EX`), or the token itself for a pure token.
    pub token: Option<&'static str>,
    pub optional: bool,
    /// It may repeat.
    pub multiple: bool,
    /// It repeats with its token (`GET a GET b`).
    pub multiple_token: bool,
}

/// An argument as parsed, and whether it was a bare token word (which may introduce what
/// follows it in a group).
struct Parsed {
    arg: Arg,
    bare_token: bool,
}

struct Parser {
    text: &'static str,
    at: usize,
}

/// The arguments `syntax` describes, or what is wrong with it.
pub fn parse(syntax: &'static str) -> Result<Vec<Arg>, String> {
    let mut parser = Parser {
        text: syntax,
        at: 0,
    };
    let elements = parser.sequence()?;
    if parser.at != syntax.len() {
        return Err(parser.error("unexpected character"));
    }
    Ok(elements.into_iter().map(|p| p.arg).collect())
}

impl Parser {
    fn rest(&self) -> &'static str {
        &self.text[self.at..]
    }

    fn error(&self, what: &str) -> String {
        format!("{what} at {} of {:?}", self.at, self.text)
    }

    /// Elements separated by single spaces, up to `]`, `)`, `|` or the end.
    fn sequence(&mut self) -> Result<Vec<Parsed>, String> {
        let mut out = Vec::new();
        while !self.rest().is_empty() && !self.rest().starts_with([']', ')', '|']) {
            if !out.is_empty() {
                self.at += self
                    .rest()
                    .strip_prefix(' ')
                    .map(|_| 1)
                    .ok_or_else(|| self.error("expected a space"))?;
            }
            out.push(self.element()?);
        }
        Ok(out)
    }

    /// `[name=]unit[...]`.
    fn element(&mut self) -> Result<Parsed, String> {
        let label = self.label();
        let mut parsed = match self.rest().as_bytes().first() {
            Some(b'[') => {
                let mut group = self.group(b']', label)?;
                group.arg.optional = true;
                group
            }
            Some(b'(') => self.group(b')', label)?,
            _ if label.is_some() => return Err(self.error("a name for a single word")),
            _ => self.word()?,
        };
        if let Some(rest) = self.rest().strip_prefix("...") {
            self.at = self.text.len() - rest.len();
            parsed.arg.multiple = true;
            // A repeated group that belongs to a token repeats the token too.
            parsed.arg.multiple_token = parsed.arg.token.is_some() && !parsed.bare_token;
            parsed.bare_token = false;
        }
        Ok(parsed)
    }

    /// `name=` before a group, consumed.
    fn label(&mut self) -> Option<String> {
        let rest = self.rest();
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))?;
        if end == 0 || !rest[end..].starts_with("=") {
            return None;
        }
        self.at += end + 1;
        Some(rest[..end].to_owned())
    }

    /// A bracketed group: alternatives up to `close`.
    fn group(&mut self, close: u8, label: Option<String>) -> Result<Parsed, String> {
        self.at += 1;
        let mut alternatives = vec![self.sequence()?];
        while self.rest().starts_with('|') {
            self.at += 1;
            alternatives.push(self.sequence()?);
        }
        if self.rest().as_bytes().first() != Some(&close) {
            return Err(self.error("unclosed group"));
        }
        self.at += 1;
        let arg = if alternatives.len() == 1 {
            let sequence = alternatives.pop().unwrap_or_default();
            self.one(sequence, label)?
        } else {
            let name = label.ok_or_else(|| self.error("alternatives without a name"))?;
            let args = alternatives
                .into_iter()
                .map(|sequence| self.one(sequence, None))
                .collect::<Result<_, _>>()?;
            plain(name, Kind::OneOf(args))
        };
        Ok(Parsed {
            arg,
            bare_token: false,
        })
    }

    /// One argument standing for `sequence`: the element itself, the element after a token
    /// introducing it, or a block.
    fn one(&self, mut sequence: Vec<Parsed>, label: Option<String>) -> Result<Arg, String> {
        let mut arg = match sequence.len() {
            0 => return Err(self.error("an empty group")),
            1 => sequence
                .pop()
                .map(|p| p.arg)
                .unwrap_or_else(|| unreachable!()),
            2 if sequence[0].bare_token && sequence[1].arg.token.is_none() => {
                let token = sequence[0].arg.token;
                let mut arg = sequence
                    .pop()
                    .map(|p| p.arg)
                    .unwrap_or_else(|| unreachable!());
                arg.token = token;
                arg
            }
            _ if sequence[0].bare_token => {
                let token = sequence.remove(0).arg;
                let args = sequence.into_iter().map(|p| p.arg).collect();
                Arg {
                    token: token.token,
                    ..plain(token.name, Kind::Block(args))
                }
            }
            _ => {
                let args = sequence.into_iter().map(|p| p.arg).collect();
                let name = label
                    .clone()
                    .ok_or_else(|| self.error("a group without a name"))?;
                plain(name, Kind::Block(args))
            }
        };
        if let Some(label) = label {
            arg.name = label;
        }
        Ok(arg)
    }

    /// A token (`NX`) or `name[:type]`.
    fn word(&mut self) -> Result<Parsed, String> {
        let rest = self.rest();
        let end = rest
            .find([' ', '|', '[', ']', '(', ')', '.', '='])
            .unwrap_or(rest.len());
        let word = &rest[..end];
        if word.is_empty() {
            return Err(self.error("expected a word"));
        }
        self.at += end;
        let is_token = word.bytes().any(|b| b.is_ascii_uppercase())
            && word
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-');
        if is_token {
            return Ok(Parsed {
                arg: Arg {
                    token: Some(word),
                    ..plain(word.to_ascii_lowercase(), Kind::PureToken)
                },
                bare_token: true,
            });
        }
        let (name, kind) = match word.split_once(':') {
            None => (word, Kind::String),
            Some((name, kind)) => (
                name,
                match kind {
                    "key" => Kind::Key,
                    "string" => Kind::String,
                    "integer" => Kind::Integer,
                    "double" => Kind::Double,
                    "pattern" => Kind::Pattern,
                    "unix-time" => Kind::UnixTime,
                    _ => return Err(self.error("an unknown type")),
                },
            ),
        };
        Ok(Parsed {
            arg: plain(name.to_owned(), kind),
            bare_token: false,
        })
    }
}

fn plain(name: String, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
        multiple_token: false,
    }
}

/// Writes `args` as `COMMAND DOCS`' `arguments` array. Key arguments are numbered with the
/// key specification they belong to: in order, the last specification taking the rest.
pub fn write(reply: &mut Reply, args: &[Arg], key_specs: usize) {
    let mut keys_seen = 0;
    write_list(reply, args, key_specs, &mut keys_seen);
}

fn write_list(reply: &mut Reply, args: &[Arg], key_specs: usize, keys_seen: &mut usize) {
    reply.array(args.len());
    for arg in args {
        let children = match &arg.kind {
            Kind::OneOf(args) | Kind::Block(args) => Some(args),
            _ => None,
        };
        let is_key = arg.kind == Kind::Key && key_specs > 0;
        let flags = [
            (arg.optional, "optional"),
            (arg.multiple, "multiple"),
            (arg.multiple_token, "multiple_token"),
        ];
        let flag_count = flags.iter().filter(|(on, _)| *on).count();
        reply.map(
            2 + usize::from(is_key)
                + usize::from(arg.token.is_some())
                + usize::from(flag_count > 0)
                + usize::from(children.is_some()),
        );
        reply.bulk(b"name");
        reply.bulk(arg.name.as_bytes());
        reply.bulk(b"type");
        reply.bulk(arg.kind.name().as_bytes());
        if is_key {
            reply.bulk(b"key_spec_index");
            reply.int((*keys_seen).min(key_specs - 1) as i64);
            *keys_seen += 1;
        }
        if let Some(token) = arg.token {
            reply.bulk(b"token");
            reply.bulk(token.as_bytes());
        }
        if flag_count > 0 {
            reply.bulk(b"flags");
            reply.set(flag_count);
            for (_, name) in flags.iter().filter(|(on, _)| *on) {
                reply.simple(name);
            }
        }
        if let Some(children) = children {
            reply.bulk(b"arguments");
            write_list(reply, children, key_specs, keys_seen);
        }
    }
}

/// `args` as a usage line, the way `redis-cli` shows them (`key value [NX|XX]`).
pub fn usage(args: &[Arg]) -> String {
    let parts: Vec<String> = args.iter().map(usage_of).collect();
    parts.join(" ")
}

fn usage_of(arg: &Arg) -> String {
    let body = match &arg.kind {
        Kind::PureToken => String::new(),
        Kind::OneOf(args) => args.iter().map(usage_of).collect::<Vec<_>>().join("|"),
        Kind::Block(args) => usage(args),
        _ => arg.name.clone(),
    };
    let one = match (arg.token, body.is_empty()) {
        (Some(token), true) => token.to_owned(),
        (Some(token), false) => format!("{token} {body}"),
        (None, _) => body,
    };
    let repeated = if arg.multiple_token {
        format!("{one} [{one} ...]")
    } else if arg.multiple {
        let again = match &arg.kind {
            Kind::Block(args) => usage(args),
            Kind::OneOf(_) => one.clone(),
            _ => arg.name.clone(),
        };
        format!("{one} [{again} ...]")
    } else {
        one
    };
    if arg.optional {
        format!("[{repeated}]")
    } else {
        repeated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(word: &'static str) -> Arg {
        Arg {
            token: Some(word),
            ..plain(word.to_ascii_lowercase(), Kind::PureToken)
        }
    }

    fn optional(arg: Arg) -> Arg {
        Arg {
            optional: true,
            ..arg
        }
    }

    #[test]
    fn parse_reads_types_tokens_and_named_groups() {
        let args = parse("key:key value condition=[NX|XX] [GET] [EX seconds:integer]").unwrap();
        assert_eq!(
            args,
            [
                plain("key".into(), Kind::Key),
                plain("value".into(), Kind::String),
                optional(plain(
                    "condition".into(),
                    Kind::OneOf(vec![token("NX"), token("XX")])
                )),
                optional(token("GET")),
                optional(Arg {
                    token: Some("EX"),
                    ..plain("seconds".into(), Kind::Integer)
                }),
            ]
        );
    }

    #[test]
    fn parse_makes_blocks_of_tokens_followed_by_several_elements() {
        let args = parse("[AUTH username password] data=(key:key value)...").unwrap();
        assert_eq!(
            args[0],
            optional(Arg {
                token: Some("AUTH"),
                ..plain(
                    "auth".into(),
                    Kind::Block(vec![
                        plain("username".into(), Kind::String),
                        plain("password".into(), Kind::String)
                    ])
                )
            })
        );
        assert_eq!(
            args[1],
            Arg {
                multiple: true,
                ..plain(
                    "data".into(),
                    Kind::Block(vec![
                        plain("key".into(), Kind::Key),
                        plain("value".into(), Kind::String)
                    ])
                )
            }
        );
    }

    #[test]
    fn parse_repeats_words_and_tokened_groups() {
        let args = parse("[ID client-id:integer...] [(GET pattern)...]").unwrap();
        assert!(args[0].multiple && !args[0].multiple_token);
        assert_eq!(args[0].token, Some("ID"));
        assert!(args[1].multiple && args[1].multiple_token);
    }

    #[test]
    fn parse_refuses_malformed_syntax() {
        for bad in [
            "[NX|XX]",
            "(a b)",
            "[a",
            "a  b",
            "a:nosuchtype",
            "x=a",
            "[]",
            "a]",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("").unwrap(), []);
    }

    #[test]
    fn usage_reads_as_redis_cli_shows_it() {
        let syntax =
            "key:key value condition=[NX|XX] [GET] expiration=[EX seconds:integer|KEEPTTL] \
                      data=(key:key value)... [ID client-id:integer...] [AUTH username password] \
                      filter=(ID id|SKIPME answer=(YES|NO))...";
        assert_eq!(
            usage(&parse(syntax).unwrap()),
            "key value [NX|XX] [GET] [EX seconds|KEEPTTL] key value [key value ...] \
             [ID client-id [client-id ...]] [AUTH username password] \
             ID id|SKIPME YES|NO [ID id|SKIPME YES|NO ...]"
        );
    }
}
