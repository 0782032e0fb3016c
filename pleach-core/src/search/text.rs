//! Text into index terms: identifiers split at `_`, `-`, `.` and case changes, lower-cased, the
//! words a question is made of but a tool is not named by dropped, and a light suffix stemmer.
//!
//! Both sides of a search go through [`terms`]: the tools' fields when the index is built and the
//! query when it is searched, so a query's "temperatures" meets a parameter's `temperature`.

/// Words that carry a question's grammar but no tool's meaning. Dropping them keeps a question's
/// "how do I get…" from matching every `get_` tool ahead of the one about its subject.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from",
    "get", "given", "how", "i", "in", "is", "it", "me", "my", "need", "of", "on", "or", "please",
    "that", "the", "this", "to", "use", "using", "want", "what", "which", "with", "would", "you",
    "your",
];

/// Suffixes the stemmer takes off, longest first within each family; one is taken off a word, and
/// only when at least [`MIN_STEM`] characters are left. The stemmer reads them split by last
/// letter (`suffixes_ending_in`); a test holds the two lists to one another.
#[cfg(test)]
const SUFFIXES: &[&str] = &[
    "ational", "ations", "ation", "ments", "ment", "ness", "ities", "ity", "ings", "ing", "ers",
    "er", "ied", "ies", "ed", "es", "ly", "al", "ive", "izes", "ize", "s",
];

/// The suffixes the stemmer takes off that end in `last`, longest first within each family: a
/// word is compared with those alone.
fn suffixes_ending_in(last: u8) -> &'static [&'static str] {
    match last {
        b'l' => &["ational", "al"],
        b's' => &[
            "ations", "ments", "ness", "ities", "ings", "ers", "ies", "es", "izes", "s",
        ],
        b'n' => &["ation"],
        b't' => &["ment"],
        b'y' => &["ity", "ly"],
        b'g' => &["ing"],
        b'r' => &["er"],
        b'd' => &["ied", "ed"],
        b'e' => &["ive", "ize"],
        _ => &[],
    }
}

/// The shortest stem a suffix may leave: "uses" is not cut to "u", nor "bus" to "bu".
const MIN_STEM: usize = 4;

/// [`STOP_WORDS`] packed as [`pack`] packs a word: a word is checked against them with integer
/// comparisons rather than string ones (the check runs once per word of every tool indexed).
const STOP_WORDS_PACKED: [u64; STOP_WORDS.len()] = {
    let mut packed = [0; STOP_WORDS.len()];
    let mut i = 0;
    while i < STOP_WORDS.len() {
        packed[i] = pack(STOP_WORDS[i].as_bytes());
        i += 1;
    }
    packed
};

/// The bytes of a word of at most eight bytes as one integer, the first byte lowest: two such
/// words are equal when their integers are.
const fn pack(word: &[u8]) -> u64 {
    let mut packed = 0;
    let mut i = 0;
    while i < word.len() {
        packed |= (word[i] as u64) << (8 * i);
        i += 1;
    }
    packed
}

fn is_stop_word(word: &str) -> bool {
    // No stop word is longer than six letters: most words skip the comparison.
    word.len() <= 6 && STOP_WORDS_PACKED.contains(&pack(word.as_bytes()))
}

/// The index terms of `text`, in order, repeats kept (term frequency counts them).
#[cfg(test)]
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, &mut String::new(), |term| out.push(term.to_owned()));
    out
}

/// Calls `f` with each index term of `text`, built in `buf` (reused: no allocation per term).
pub(crate) fn for_each_term(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    for_each_word(text, |word| {
        if let Some(term) = term(word, buf) {
            f(term);
        }
    });
}

/// The index term of `word` (one of [`for_each_word`]'s), built in `buf`: lower-cased and
/// stemmed, or `None` for a stop word.
pub(crate) fn term<'a>(word: &str, buf: &'a mut String) -> Option<&'a str> {
    buf.clear();
    if word.is_ascii() {
        buf.push_str(word);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(word.chars().flat_map(char::to_lowercase));
    }
    if is_stop_word(buf) {
        return None;
    }
    // A number in a question is a value for the call ("100 euros", "on December 13, 2019"),
    // not what a tool does; in a tool's text it is an example or a version. A number within a
    // word (`sha256`, `v2`) is kept with it.
    if buf.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    stem(buf);
    Some(buf)
}

/// Calls `f` with each word of `text`: runs of letters and digits, split where a lower-case
/// letter or a digit meets an upper-case one (`getWeather`, `v2Api`) and before the last capital
/// of a run of capitals followed by a lower-case letter (`HTTPServer` → `HTTP`, `Server`).
pub(crate) fn for_each_word(text: &str, f: impl FnMut(&str)) {
    // All-ASCII text (the common case) is read byte by byte with a class table, without decoding
    // UTF-8 or asking Unicode's tables.
    if text.is_ascii() {
        split_ascii_words(text, f);
    } else {
        split_words(text, text.char_indices(), f);
    }
}

/// What [`split_ascii_words`] needs to know of a byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Separator,
    Lower,
    Upper,
    Digit,
}

/// Every ASCII byte's [`Class`].
const CLASSES: [Class; 128] = {
    let mut classes = [Class::Separator; 128];
    let mut byte: u8 = 0;
    while byte < 128 {
        classes[byte as usize] = match byte {
            b'a'..=b'z' => Class::Lower,
            b'A'..=b'Z' => Class::Upper,
            b'0'..=b'9' => Class::Digit,
            _ => Class::Separator,
        };
        byte += 1;
    }
    classes
};

/// [`split_words`] for ASCII `text`, the same words. A loop of its own rather than one splitter
/// over (offset, class) pairs fed by either text (a `Peekable` for the look-ahead): that one
/// built the bench's 10,000-tool index about a fifth slower (29–30 ms against 24–25), and slowed
/// its queries' p99 by some 5 µs.
fn split_ascii_words(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let class = |at: usize| CLASSES[usize::from(bytes[at] & 0x7f)];
    let mut start: Option<usize> = None;
    let mut previous = Class::Separator;
    for at in 0..bytes.len() {
        let here = class(at);
        if here == Class::Separator {
            if let Some(from) = start.take() {
                f(&text[from..at]);
            }
            previous = here;
            continue;
        }
        if let Some(from) = start {
            let lower_to_upper =
                matches!(previous, Class::Lower | Class::Digit) && here == Class::Upper;
            let acronym_end = previous == Class::Upper
                && here == Class::Upper
                && at + 1 < bytes.len()
                && class(at + 1) == Class::Lower;
            if lower_to_upper || acronym_end {
                f(&text[from..at]);
                start = Some(at);
            }
        } else {
            start = Some(at);
        }
        previous = here;
    }
    if let Some(from) = start {
        f(&text[from..]);
    }
}

/// [`for_each_word`] over `chars`, the characters of `text` with their byte offsets.
fn split_words(text: &str, chars: impl Iterator<Item = (usize, char)>, mut f: impl FnMut(&str)) {
    let mut start: Option<usize> = None;
    let mut previous = ' ';
    let mut chars = chars.peekable();
    while let Some((at, here)) = chars.next() {
        if !here.is_alphanumeric() {
            if let Some(from) = start.take() {
                f(&text[from..at]);
            }
            continue;
        }
        match start {
            None => start = Some(at),
            Some(from) => {
                let lower_to_upper =
                    (previous.is_lowercase() || previous.is_ascii_digit()) && here.is_uppercase();
                let acronym_end = previous.is_uppercase()
                    && here.is_uppercase()
                    && chars.peek().is_some_and(|(_, next)| next.is_lowercase());
                if lower_to_upper || acronym_end {
                    f(&text[from..at]);
                    start = Some(at);
                }
            }
        }
        previous = here;
    }
    if let Some(from) = start {
        f(&text[from..]);
    }
}

/// `word` (lower case) with one common English suffix taken off, then a final `e`: "calculates",
/// "calculated" and "calculate" meet as `calculat`, "reservation" and "reserve" as `reserv`.
/// Words with a non-ASCII letter are left as they are.
fn stem(word: &mut String) {
    if !word.is_ascii() {
        return;
    }
    let Some(&last) = word.as_bytes().last() else {
        return;
    };
    if let Some(suffix) = suffixes_ending_in(last)
        .iter()
        .find(|suffix| word.ends_with(*suffix) && word.len() - suffix.len() >= MIN_STEM)
    {
        word.truncate(word.len() - suffix.len());
    }
    if word.len() > MIN_STEM && word.ends_with('e') {
        word.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_and_short_enough_to_pack() {
        assert!(STOP_WORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(STOP_WORDS.iter().all(|word| word.len() <= 6));
    }

    #[test]
    fn suffixes_by_last_letter_are_the_suffixes_in_order() {
        let mut by_letter: Vec<&str> = Vec::new();
        for letter in b'a'..=b'z' {
            by_letter.extend(suffixes_ending_in(letter));
        }
        let mut all: Vec<&str> = SUFFIXES.to_vec();
        all.sort_unstable();
        by_letter.sort_unstable();
        assert_eq!(by_letter, all);
        for letter in b'a'..=b'z' {
            let in_order: Vec<&str> = SUFFIXES
                .iter()
                .copied()
                .filter(|suffix| suffix.as_bytes().last() == Some(&letter))
                .collect();
            assert_eq!(suffixes_ending_in(letter), in_order.as_slice());
        }
    }

    #[test]
    fn identifiers_split_at_separators_and_case() {
        assert_eq!(
            terms("Weather_1_GetWeather"),
            ["weath", "weath"],
            "`get` is a stop word, `1` a number"
        );
        assert_eq!(
            terms("parseHTTPServer-name.v2Api"),
            ["pars", "http", "serv", "name", "v2", "api"]
        );
        assert_eq!(terms("math.triangle_area"), ["math", "triangl", "area"]);
    }

    #[test]
    fn inflections_meet_at_one_stem() {
        assert_eq!(terms("calculates calculated calculate"), ["calculat"; 3]);
        assert_eq!(terms("reservation reserve"), ["reserv"; 2]);
        assert_eq!(terms("uses bus"), ["uses", "bus"], "too short to cut");
    }

    #[test]
    fn stop_words_are_found_by_their_packed_form() {
        for word in STOP_WORDS {
            assert!(is_stop_word(word), "{word}");
        }
        for word in ["gets", "g", "pleases", "", "ab", "wants"] {
            assert!(!is_stop_word(word), "{word}");
        }
    }

    #[test]
    fn the_ascii_splitter_splits_as_the_general_one() {
        let words = |text: &str, ascii: bool| {
            let mut out = Vec::new();
            if ascii {
                split_ascii_words(text, |word| out.push(word.to_owned()));
            } else {
                split_words(text, text.char_indices(), |word| out.push(word.to_owned()));
            }
            out
        };
        for text in [
            "Weather_1_GetWeather",
            "parseHTTPServer-name.v2Api",
            "  A  aB AB ABc 9Z z9 __x__ ",
            "HTTP",
            "x",
            "",
            "IOError: can't open /tmp/a.txt (code 2)",
        ] {
            assert_eq!(words(text, true), words(text, false), "{text:?}");
        }
    }

    #[test]
    fn numbers_are_values_not_terms_unless_part_of_a_word() {
        assert_eq!(
            terms("convert 100 euros on 2019-12-13 with sha256 v2"),
            ["convert", "euro", "sha256", "v2"]
        );
    }

    #[test]
    fn non_ascii_words_are_kept_whole() {
        assert_eq!(terms("天气 Müller"), ["天气", "müller"]);
    }
}
