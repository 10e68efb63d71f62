//! Glob patterns with Redis's rules, for `KEYS`, `SCAN ... MATCH`, `CONFIG GET` and the
//! pub/sub patterns: `*` any run, `?` any byte, `[abc]`, `[^abc]`, `[a-z]` (reversed ranges
//! allowed), and `\` to take the next byte literally.
//!
//! Redis's quirks are kept, since clients see them: an empty text matches only the empty
//! pattern (not even `*`; `KEYS *` and `SCAN` without `MATCH` list the empty key because they
//! do not match at all); an unclosed class runs to the end of the pattern; a range compares
//! bytes as C's signed `char`s (so `[a-\xff]` is the range from -1 to `a`), and without case
//! it lowercases its ends after ordering them; an escaped byte in a class matches its own case
//! only.
//!
//! # Design
//!
//! The match keeps one backtracking point, the last `*`: on a mismatch the pattern resumes
//! after that star with one more byte of the text consumed. Every other token takes exactly
//! one byte, so this finds a match whenever Redis's recursive matcher does, in O(pattern x
//! text) time and constant space (Redis recurses once per star, and limits that for the same
//! reason). The unit tests check it against a port of Redis's matcher on random patterns.

/// Whether `text` matches `pattern`, ignoring ASCII case if `nocase`.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    if text.is_empty() {
        return pattern.is_empty();
    }
    let (mut p, mut t) = (0, 0);
    // After the last star: where the pattern resumes, and the text position it last tried.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pattern, p, text[t], nocase) {
                        if matched {
                            p = next;
                            t += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], text[t], nocase) {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, text[t], nocase) {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: let the last star take one more byte, or fail.
        match star {
            Some((resume, tried)) => {
                p = resume;
                t = tried + 1;
                star = Some((resume, tried + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    a == b || (nocase && a.eq_ignore_ascii_case(&b))
}

/// C's `tolower` on a signed `char`: only ASCII capitals change.
fn lower(c: i8) -> i8 {
    (c as u8).to_ascii_lowercase() as i8
}

/// Matches `c` against the class opening at `pattern[open]` (a `[`): whether it matched, and
/// where the pattern continues. An unclosed class runs to the pattern's end, as in Redis.
fn class(pattern: &[u8], open: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut p = open + 1;
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut matched = false;
    loop {
        match pattern.get(p) {
            None => break,
            Some(b']') => {
                p += 1;
                break;
            }
            Some(b'\\') if p + 1 < pattern.len() => {
                // Case counts here even without it: Redis compares an escaped byte exactly.
                matched |= pattern[p + 1] == c;
                p += 2;
            }
            Some(&start) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                // As C's signed chars, ordered first, then lowercased.
                let (a, b) = (start as i8, pattern[p + 2] as i8);
                let (mut lo, mut hi) = if a <= b { (a, b) } else { (b, a) };
                let mut x = c as i8;
                if nocase {
                    lo = lower(lo);
                    hi = lower(hi);
                    x = lower(x);
                }
                matched |= lo <= x && x <= hi;
                p += 3;
            }
            Some(&x) => {
                matched |= eq(x, c, nocase);
                p += 1;
            }
        }
    }
    Some((matched != negate, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        glob_match(pattern.as_bytes(), text.as_bytes(), false)
    }

    #[test]
    fn glob_star_and_question() {
        // Redis: an empty text matches only the empty pattern.
        assert!(!m("*", ""));
        assert!(m("", ""));
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h*llo", "hllo"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("*a*b*c*", "xxaxxcxxbxx"));
        assert!(m("user:*:name", "user:42:name"));
        assert!(!m("user:*:name", "user:42:names"));
    }

    #[test]
    fn glob_classes_ranges_and_negation() {
        assert!(m("h[ae]llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(!m("h[a-b]llo", "hcllo"));
        assert!(m("[\\]]", "]"));
        // Unclosed: the class runs to the end of the pattern.
        assert!(m("a[bc", "ab"));
    }

    #[test]
    fn glob_escapes_take_the_next_byte_literally() {
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hello"));
        assert!(m("a\\?", "a?"));
        assert!(!m("a\\?", "ab"));
    }

    #[test]
    fn glob_nocase() {
        assert!(glob_match(b"MAX*", b"maxmemory", true));
        assert!(glob_match(b"[A-C]x", b"bx", true));
        assert!(!glob_match(b"MAX*", b"maxmemory", false));
    }

    #[test]
    fn glob_many_stars_stay_fast() {
        let pattern = "*a".repeat(30) + "b";
        let text = "a".repeat(5000);
        assert!(!m(&pattern, &text));
    }

    /// Redis 7.0's `stringmatchlen` (util.c), ported as it is written, recursion and C's
    /// signed `char`s included: the model the matcher is checked against.
    fn redis_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
        fn at(s: &[u8], i: usize) -> i8 {
            s.get(i).map_or(0, |&c| c as i8)
        }
        fn tolower(c: i8) -> i8 {
            (c as u8).to_ascii_lowercase() as i8
        }
        fn go(
            pat: &[u8],
            mut p: usize,
            s: &[u8],
            mut t: usize,
            nocase: bool,
            skip: &mut bool,
        ) -> bool {
            let mut plen = pat.len() as isize - p as isize;
            let mut slen = s.len() - t;
            while plen > 0 && slen > 0 {
                match at(pat, p) as u8 {
                    b'*' => {
                        while plen > 0 && at(pat, p + 1) == b'*' as i8 {
                            p += 1;
                            plen -= 1;
                        }
                        if plen == 1 {
                            return true;
                        }
                        while slen > 0 {
                            if go(pat, p + 1, s, t, nocase, skip) {
                                return true;
                            }
                            if *skip {
                                return false;
                            }
                            t += 1;
                            slen -= 1;
                        }
                        *skip = true;
                        return false;
                    }
                    b'?' => {
                        t += 1;
                        slen -= 1;
                    }
                    b'[' => {
                        p += 1;
                        plen -= 1;
                        let not = at(pat, p) == b'^' as i8;
                        if not {
                            p += 1;
                            plen -= 1;
                        }
                        let mut matched = false;
                        loop {
                            if at(pat, p) == b'\\' as i8 && plen >= 2 {
                                p += 1;
                                plen -= 1;
                                if at(pat, p) == at(s, t) {
                                    matched = true;
                                }
                            } else if at(pat, p) == b']' as i8 {
                                break;
                            } else if plen == 0 {
                                p -= 1;
                                plen += 1;
                                break;
                            } else if plen >= 3 && at(pat, p + 1) == b'-' as i8 {
                                let (mut lo, mut hi, mut c) =
                                    (at(pat, p), at(pat, p + 2), at(s, t));
                                if lo > hi {
                                    std::mem::swap(&mut lo, &mut hi);
                                }
                                if nocase {
                                    lo = tolower(lo);
                                    hi = tolower(hi);
                                    c = tolower(c);
                                }
                                p += 2;
                                plen -= 2;
                                if c >= lo && c <= hi {
                                    matched = true;
                                }
                            } else if nocase {
                                if tolower(at(pat, p)) == tolower(at(s, t)) {
                                    matched = true;
                                }
                            } else if at(pat, p) == at(s, t) {
                                matched = true;
                            }
                            p += 1;
                            plen -= 1;
                        }
                        if not {
                            matched = !matched;
                        }
                        if !matched {
                            return false;
                        }
                        t += 1;
                        slen -= 1;
                    }
                    other => {
                        let mut c = other as i8;
                        if other == b'\\' && plen >= 2 {
                            p += 1;
                            plen -= 1;
                            c = at(pat, p);
                        }
                        let same = if nocase {
                            tolower(c) == tolower(at(s, t))
                        } else {
                            c == at(s, t)
                        };
                        if !same {
                            return false;
                        }
                        t += 1;
                        slen -= 1;
                    }
                }
                p += 1;
                plen -= 1;
                if slen == 0 {
                    while at(pat, p) == b'*' as i8 && plen > 0 {
                        p += 1;
                        plen -= 1;
                    }
                    break;
                }
            }
            plen == 0 && slen == 0
        }
        go(pattern, 0, text, 0, nocase, &mut false)
    }

    #[test]
    fn glob_agrees_with_redis_matcher_on_random_patterns() {
        // Small alphabets so that patterns and texts often meet.
        const PATTERN: &[u8] = b"ab*?[]^-\\A\xff";
        const TEXT: &[u8] = b"abAB-]^\\\xff\x80";
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..200_000 {
            let pattern: Vec<u8> = (0..next(8)).map(|_| PATTERN[next(PATTERN.len())]).collect();
            let text: Vec<u8> = (0..next(7)).map(|_| TEXT[next(TEXT.len())]).collect();
            for nocase in [false, true] {
                assert_eq!(
                    glob_match(&pattern, &text, nocase),
                    redis_match(&pattern, &text, nocase),
                    "pattern {:?} text {:?} nocase {nocase}",
                    String::from_utf8_lossy(&pattern),
                    String::from_utf8_lossy(&text),
                );
            }
        }
    }

    #[test]
    fn glob_ranges_compare_signed_chars() {
        // [a-\xff] is the range from -1 to 'a': NUL and 'a' in, 'b' and 0x80 out.
        assert!(glob_match(b"[a-\xff]", b"\0", false));
        assert!(glob_match(b"[a-\xff]", b"a", false));
        assert!(glob_match(b"[a-\xff]", b"\xff", false));
        assert!(!glob_match(b"[a-\xff]", b"b", false));
        assert!(!glob_match(b"[a-\xff]", b"\x80", false));
        // Without case, the ends are lowercased after ordering: [Z-a] becomes z..a, empty.
        assert!(glob_match(b"[Z-a]", b"_", false));
        assert!(!glob_match(b"[Z-a]", b"_", true));
    }
}
