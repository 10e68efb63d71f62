//! Glob patterns with Redis's rules, for `KEYS`, `SCAN ... MATCH`, `CONFIG GET` and the
//! pub/sub patterns: `*` any run, `?` any byte, `[abc]`, `[^abc]`, `[a-z]` (reversed ranges
//! allowed), and `\` to take the next byte literally.
//!
//! # Design
//!
//! The match keeps one backtracking point, the last `*`: on a mismatch the pattern resumes
//! after that star with one more byte of the text consumed, so a pattern of many stars costs
//! O(pattern x text) instead of the exponential time naive recursion can take (Redis limits
//! its recursion for the same reason).

/// Whether `text` matches `pattern`, ignoring ASCII case if `nocase`.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
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
                matched |= eq(pattern[p + 1], c, nocase);
                p += 2;
            }
            Some(&lo) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                let hi = pattern[p + 2];
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                let within = |x: u8| lo <= x && x <= hi;
                matched |= within(c)
                    || (nocase
                        && (within(c.to_ascii_lowercase()) || within(c.to_ascii_uppercase())));
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
        assert!(m("*", ""));
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
}
