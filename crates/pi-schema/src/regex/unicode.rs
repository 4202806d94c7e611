//! Unicode facts the checker and the formats need without Unicode's tables: which `\p{…}` names
//! ECMAScript accepts (so the `regex` format and the `u`-flag fallback decide like V8), and
//! general categories and scripts for group names and the `idn-hostname` format, computed from
//! what `char` knows: exact for ASCII and Latin-1, approximate beyond. Regex matching, `\p{…}`
//! included, is `regress`'s, with its own exact tables.

use pi_js::is_whitespace as is_js_space;

/// A general category, one bit per leaf category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gc {
    Cc,
    Cf,
    Cn,
    Co,
    Cs,
    Ll,
    Lm,
    Lo,
    Lt,
    Lu,
    Mc,
    Me,
    Mn,
    Nd,
    Nl,
    No,
    Pc,
    Pd,
    Pe,
    Pf,
    Pi,
    Po,
    Ps,
    Sc,
    Sk,
    Sm,
    So,
    Zl,
    Zp,
    Zs,
}

const fn bit(g: Gc) -> u32 {
    1 << (g as u32)
}

const C: u32 = bit(Gc::Cc) | bit(Gc::Cf) | bit(Gc::Cn) | bit(Gc::Co) | bit(Gc::Cs);
const LC: u32 = bit(Gc::Ll) | bit(Gc::Lt) | bit(Gc::Lu);
const L: u32 = LC | bit(Gc::Lm) | bit(Gc::Lo);
const M: u32 = bit(Gc::Mc) | bit(Gc::Me) | bit(Gc::Mn);
const N: u32 = bit(Gc::Nd) | bit(Gc::Nl) | bit(Gc::No);
const P: u32 =
    bit(Gc::Pc) | bit(Gc::Pd) | bit(Gc::Pe) | bit(Gc::Pf) | bit(Gc::Pi) | bit(Gc::Po) | bit(Gc::Ps);
const S: u32 = bit(Gc::Sc) | bit(Gc::Sk) | bit(Gc::Sm) | bit(Gc::So);
const Z: u32 = bit(Gc::Zl) | bit(Gc::Zp) | bit(Gc::Zs);

/// General_Category values and their aliases.
const GC_NAMES: &[(&str, &str, u32)] = &[
    ("C", "Other", C),
    ("Cc", "Control", bit(Gc::Cc)),
    ("Cf", "Format", bit(Gc::Cf)),
    ("Cn", "Unassigned", bit(Gc::Cn)),
    ("Co", "Private_Use", bit(Gc::Co)),
    ("Cs", "Surrogate", bit(Gc::Cs)),
    ("L", "Letter", L),
    ("LC", "Cased_Letter", LC),
    ("Ll", "Lowercase_Letter", bit(Gc::Ll)),
    ("Lm", "Modifier_Letter", bit(Gc::Lm)),
    ("Lo", "Other_Letter", bit(Gc::Lo)),
    ("Lt", "Titlecase_Letter", bit(Gc::Lt)),
    ("Lu", "Uppercase_Letter", bit(Gc::Lu)),
    ("M", "Mark", M),
    ("Mc", "Spacing_Mark", bit(Gc::Mc)),
    ("Me", "Enclosing_Mark", bit(Gc::Me)),
    ("Mn", "Nonspacing_Mark", bit(Gc::Mn)),
    ("N", "Number", N),
    ("Nd", "Decimal_Number", bit(Gc::Nd)),
    ("Nl", "Letter_Number", bit(Gc::Nl)),
    ("No", "Other_Number", bit(Gc::No)),
    ("P", "Punctuation", P),
    ("Pc", "Connector_Punctuation", bit(Gc::Pc)),
    ("Pd", "Dash_Punctuation", bit(Gc::Pd)),
    ("Pe", "Close_Punctuation", bit(Gc::Pe)),
    ("Pf", "Final_Punctuation", bit(Gc::Pf)),
    ("Pi", "Initial_Punctuation", bit(Gc::Pi)),
    ("Po", "Other_Punctuation", bit(Gc::Po)),
    ("Ps", "Open_Punctuation", bit(Gc::Ps)),
    ("S", "Symbol", S),
    ("Sc", "Currency_Symbol", bit(Gc::Sc)),
    ("Sk", "Modifier_Symbol", bit(Gc::Sk)),
    ("Sm", "Math_Symbol", bit(Gc::Sm)),
    ("So", "Other_Symbol", bit(Gc::So)),
    ("Z", "Separator", Z),
    ("Zl", "Line_Separator", bit(Gc::Zl)),
    ("Zp", "Paragraph_Separator", bit(Gc::Zp)),
    ("Zs", "Space_Separator", bit(Gc::Zs)),
];

/// Extra General_Category aliases.
const GC_ALIASES: &[(&str, u32)] = &[
    ("cntrl", bit(Gc::Cc)),
    ("Combining_Mark", M),
    ("digit", bit(Gc::Nd)),
    ("punct", P),
];

/// The binary properties ECMAScript names (long name, short name).
const BINARY: &[(&str, &str)] = &[
    ("ASCII", "ASCII"),
    ("ASCII_Hex_Digit", "AHex"),
    ("Alphabetic", "Alpha"),
    ("Any", "Any"),
    ("Assigned", "Assigned"),
    ("Bidi_Control", "Bidi_C"),
    ("Bidi_Mirrored", "Bidi_M"),
    ("Case_Ignorable", "CI"),
    ("Cased", "Cased"),
    ("Changes_When_Casefolded", "CWCF"),
    ("Changes_When_Casemapped", "CWCM"),
    ("Changes_When_Lowercased", "CWL"),
    ("Changes_When_NFKC_Casefolded", "CWKCF"),
    ("Changes_When_Titlecased", "CWT"),
    ("Changes_When_Uppercased", "CWU"),
    ("Dash", "Dash"),
    ("Default_Ignorable_Code_Point", "DI"),
    ("Deprecated", "Dep"),
    ("Diacritic", "Dia"),
    ("Emoji", "Emoji"),
    ("Emoji_Component", "EComp"),
    ("Emoji_Modifier", "EMod"),
    ("Emoji_Modifier_Base", "EBase"),
    ("Emoji_Presentation", "EPres"),
    ("Extended_Pictographic", "ExtPict"),
    ("Extender", "Ext"),
    ("Grapheme_Base", "Gr_Base"),
    ("Grapheme_Extend", "Gr_Ext"),
    ("Hex_Digit", "Hex"),
    ("IDS_Binary_Operator", "IDSB"),
    ("IDS_Trinary_Operator", "IDST"),
    ("ID_Continue", "IDC"),
    ("ID_Start", "IDS"),
    ("Ideographic", "Ideo"),
    ("Join_Control", "Join_C"),
    ("Logical_Order_Exception", "LOE"),
    ("Lowercase", "Lower"),
    ("Math", "Math"),
    ("Noncharacter_Code_Point", "NChar"),
    ("Pattern_Syntax", "Pat_Syn"),
    ("Pattern_White_Space", "Pat_WS"),
    ("Quotation_Mark", "QMark"),
    ("Radical", "Radical"),
    ("Regional_Indicator", "RI"),
    ("Sentence_Terminal", "STerm"),
    ("Soft_Dotted", "SDot"),
    ("Terminal_Punctuation", "Term"),
    ("Unified_Ideograph", "UIdeo"),
    ("Uppercase", "Upper"),
    ("Variation_Selector", "VS"),
    ("White_Space", "space"),
    ("XID_Continue", "XIDC"),
    ("XID_Start", "XIDS"),
];

/// Scripts with their main blocks; other script names are valid and match nothing.
/// A script: long name, short name, code point ranges.
type Script = (&'static str, &'static str, &'static [(u32, u32)]);

const SCRIPTS: &[Script] = &[
    (
        "Latin",
        "Latn",
        &[
            (0x41, 0x5a),
            (0x61, 0x7a),
            (0xaa, 0xaa),
            (0xba, 0xba),
            (0xc0, 0xd6),
            (0xd8, 0xf6),
            (0xf8, 0x2b8),
            (0x1d00, 0x1d25),
            (0x1e00, 0x1eff),
            (0x2c60, 0x2c7f),
            (0xa722, 0xa7ff),
            (0xab30, 0xab64),
            (0xff21, 0xff3a),
            (0xff41, 0xff5a),
        ],
    ),
    ("Greek", "Grek", &[(0x370, 0x3ff), (0x1f00, 0x1fff)]),
    (
        "Cyrillic",
        "Cyrl",
        &[
            (0x400, 0x52f),
            (0x1c80, 0x1c8f),
            (0x2de0, 0x2dff),
            (0xa640, 0xa69f),
        ],
    ),
    ("Armenian", "Armn", &[(0x531, 0x58f), (0xfb13, 0xfb17)]),
    ("Hebrew", "Hebr", &[(0x591, 0x5f4), (0xfb1d, 0xfb4f)]),
    (
        "Arabic",
        "Arab",
        &[
            (0x600, 0x6ff),
            (0x750, 0x77f),
            (0x8a0, 0x8ff),
            (0xfb50, 0xfdff),
            (0xfe70, 0xfefc),
        ],
    ),
    ("Syriac", "Syrc", &[(0x700, 0x74f), (0x860, 0x86f)]),
    ("Thaana", "Thaa", &[(0x780, 0x7bf)]),
    ("Mandaic", "Mand", &[(0x840, 0x85f)]),
    ("Devanagari", "Deva", &[(0x900, 0x97f), (0xa8e0, 0xa8ff)]),
    ("Thai", "Thai", &[(0xe01, 0xe5b)]),
    (
        "Hangul",
        "Hang",
        &[(0x1100, 0x11ff), (0x3131, 0x318e), (0xac00, 0xd7a3)],
    ),
    ("Hiragana", "Hira", &[(0x3041, 0x309f)]),
    (
        "Katakana",
        "Kana",
        &[
            (0x30a1, 0x30fa),
            (0x30fd, 0x30ff),
            (0x31f0, 0x31ff),
            (0xff66, 0xff9d),
        ],
    ),
    (
        "Han",
        "Hani",
        &[
            (0x2e80, 0x2fd5),
            (0x3005, 0x3005),
            (0x3007, 0x3007),
            (0x3021, 0x3029),
            (0x3038, 0x303b),
            (0x3400, 0x4dbf),
            (0x4e00, 0x9fff),
            (0xf900, 0xfaff),
            (0x20000, 0x3134f),
        ],
    ),
];

/// Whether ECMAScript accepts `text` as the body of a `\p{…}` escape: a General_Category value,
/// a binary property, or `Script`/`Script_Extensions` with a value (which `regress` checks
/// against the real list of scripts).
pub(crate) fn is_property(text: &str) -> bool {
    if let Some((name, value)) = text.split_once('=') {
        return match name {
            "General_Category" | "gc" => gc_value(value).is_some(),
            "Script" | "sc" | "Script_Extensions" | "scx" => {
                !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
            _ => false,
        };
    }
    gc_value(text).is_some()
        || BINARY
            .iter()
            .any(|(long, short)| *long == text || *short == text)
}

fn gc_value(value: &str) -> Option<u32> {
    GC_NAMES
        .iter()
        .find(|(short, long, _)| *short == value || *long == value)
        .map(|(_, _, mask)| *mask)
        .or_else(|| {
            GC_ALIASES
                .iter()
                .find(|(name, _)| *name == value)
                .map(|(_, mask)| *mask)
        })
}

/// The general category of ASCII characters, exact.
const ASCII_GC: &[u8; 128] = b"\
CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC\
ZPPPSPPP()PSPDPPNNNNNNNNNNPPSSSP\
PUUUUUUUUUUUUUUUUUUUUUUUUUU(P)K_\
Kllllllllllllllllllllllllll(S)SC";

fn ascii_gc(c: u8) -> Gc {
    match ASCII_GC[usize::from(c & 0x7f)] {
        b'C' => Gc::Cc,
        b'Z' => Gc::Zs,
        b'P' => Gc::Po,
        b'S' => match c {
            b'$' => Gc::Sc,
            _ => Gc::Sm,
        },
        b'(' => Gc::Ps,
        b')' => Gc::Pe,
        b'D' => Gc::Pd,
        b'N' => Gc::Nd,
        b'U' => Gc::Lu,
        b'l' => Gc::Ll,
        b'K' => Gc::Sk,
        b'_' => Gc::Pc,
        _ => Gc::Cn,
    }
}

/// The general category of `ch`: exact for ASCII and Latin-1, approximate beyond.
fn general_category(ch: char) -> Gc {
    let c = u32::from(ch);
    if c < 0x80 {
        return ascii_gc(c as u8);
    }
    if (0xff01..=0xff5e).contains(&c) {
        // Fullwidth forms mirror ASCII.
        return ascii_gc((c - 0xfee0) as u8);
    }
    match c {
        0x80..=0x9f => return Gc::Cc,
        0xa0 => return Gc::Zs,
        0xa1 | 0xa7 | 0xb6 | 0xb7 | 0xbf => return Gc::Po,
        0xa2..=0xa5 => return Gc::Sc,
        0xa6 | 0xa9 | 0xae | 0xb0 => return Gc::So,
        0xa8 | 0xaf | 0xb4 | 0xb8 => return Gc::Sk,
        0xaa | 0xba => return Gc::Lo,
        0xab => return Gc::Pi,
        0xbb => return Gc::Pf,
        0xac | 0xb1 | 0xd7 | 0xf7 => return Gc::Sm,
        0xad => return Gc::Cf,
        0xb2 | 0xb3 | 0xb9 | 0xbc..=0xbe => return Gc::No,
        0xb5 => return Gc::Ll,
        0xc0..=0xde => return Gc::Lu,
        0xdf..=0xff => return Gc::Ll,
        0x2028 => return Gc::Zl,
        0x2029 => return Gc::Zp,
        0x1680 | 0x2000..=0x200a | 0x202f | 0x205f | 0x3000 => return Gc::Zs,
        0x600..=0x605
        | 0x61c
        | 0x6dd
        | 0x70f
        | 0x180e
        | 0x200b..=0x200f
        | 0x202a..=0x202e
        | 0x2060..=0x2064
        | 0x2066..=0x206f
        | 0xfeff
        | 0xfff9..=0xfffb
        | 0xe0001
        | 0xe0020..=0xe007f => return Gc::Cf,
        0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd => return Gc::Co,
        0x488 | 0x489 | 0x20dd..=0x20e0 | 0x20e2..=0x20e4 | 0xa670..=0xa672 => return Gc::Me,
        0x300..=0x36f
        | 0x483..=0x487
        | 0x591..=0x5bd
        | 0x5bf
        | 0x5c1
        | 0x5c2
        | 0x5c4
        | 0x5c5
        | 0x5c7
        | 0x610..=0x61a
        | 0x64b..=0x65f
        | 0x670
        | 0x6d6..=0x6dc
        | 0x6df..=0x6e4
        | 0x6e7
        | 0x6e8
        | 0x6ea..=0x6ed
        | 0x1ab0..=0x1abd
        | 0x1dc0..=0x1dff
        | 0x20d0..=0x20dc
        | 0x20e1
        | 0x20e5..=0x20f0
        | 0xfe00..=0xfe0f
        | 0xfe20..=0xfe2f
        | 0xe0100..=0xe01ef => return Gc::Mn,
        0x2b0..=0x2c1
        | 0x2c6..=0x2d1
        | 0x2e0..=0x2e4
        | 0x2ec
        | 0x2ee
        | 0x3005
        | 0x309d
        | 0x309e
        | 0x30fc..=0x30fe => {
            return Gc::Lm;
        }
        0x2c2..=0x2c5 | 0x2d2..=0x2df | 0x2e5..=0x2eb | 0x2ed | 0x2ef..=0x2ff | 0x309b | 0x309c => {
            return Gc::Sk;
        }
        0x1c5
        | 0x1c8
        | 0x1cb
        | 0x1f2
        | 0x1f88..=0x1f8f
        | 0x1f98..=0x1f9f
        | 0x1fa8..=0x1faf
        | 0x1fbc
        | 0x1fcc
        | 0x1ffc => {
            return Gc::Lt;
        }
        0x2010..=0x2015 | 0x2e3a | 0x2e3b | 0x301c | 0x3030 | 0xfe58 | 0xfe63 => return Gc::Pd,
        0x2018 | 0x201b | 0x201c | 0x201f | 0x2039 => return Gc::Pi,
        0x2019 | 0x201d | 0x203a => return Gc::Pf,
        0x201a | 0x201e | 0x2045 | 0x207d | 0x208d | 0x2329 | 0x3008 | 0x300a | 0x300c | 0x300e
        | 0x3010 | 0x3014 | 0x3016 | 0x3018 | 0x301a | 0x301d => {
            return Gc::Ps;
        }
        0x2046 | 0x207e | 0x208e | 0x232a | 0x3009 | 0x300b | 0x300d | 0x300f | 0x3011 | 0x3015
        | 0x3017 | 0x3019 | 0x301b | 0x301e | 0x301f => {
            return Gc::Pe;
        }
        0x203f | 0x2040 | 0x2054 | 0xfe33 | 0xfe34 | 0xfe4d..=0xfe4f => return Gc::Pc,
        0x2016
        | 0x2017
        | 0x2020..=0x2027
        | 0x2030..=0x2038
        | 0x203b..=0x203e
        | 0x2041..=0x2043
        | 0x2047..=0x2051
        | 0x2053
        | 0x2055..=0x205e
        | 0x3001..=0x3003
        | 0x30fb
        | 0x55a..=0x55f
        | 0x589
        | 0x5c0
        | 0x5c3
        | 0x5c6
        | 0x5f3
        | 0x5f4
        | 0x60c
        | 0x60d
        | 0x61b
        | 0x61d..=0x61f
        | 0x66a..=0x66d
        | 0x6d4
        | 0x964
        | 0x965
        | 0x970
        | 0xe4f
        | 0xe5a
        | 0xe5b => {
            return Gc::Po;
        }
        0x20a0..=0x20c0 | 0xfdfc | 0xfe69 | 0xffe0 | 0xffe1 | 0xffe5 | 0xffe6 => return Gc::Sc,
        0x2044
        | 0x2052
        | 0x207a..=0x207c
        | 0x208a..=0x208c
        | 0x2118
        | 0x2140..=0x2144
        | 0x214b
        | 0x2190..=0x2194
        | 0x2200..=0x22ff
        | 0x2320
        | 0x2321
        | 0x237c
        | 0x239b..=0x23b3
        | 0x25b7
        | 0x25c1
        | 0x25f8..=0x25ff
        | 0x266f
        | 0x27c0..=0x27c4
        | 0x27c7..=0x27e5
        | 0x27f0..=0x27ff
        | 0x2900..=0x2982
        | 0x2999..=0x29d7
        | 0x29dc..=0x29fb
        | 0x29fe..=0x2aff
        | 0xfb29
        | 0xfe62
        | 0xfe64..=0xfe66
        | 0xffe2
        | 0xffe9..=0xffec => {
            return Gc::Sm;
        }
        0x16ee..=0x16f0
        | 0x2160..=0x2182
        | 0x2185..=0x2188
        | 0x3007
        | 0x3021..=0x3029
        | 0x3038..=0x303a
        | 0x10140..=0x10174 => {
            return Gc::Nl;
        }
        0x2070..=0x209f
        | 0x2150..=0x215f
        | 0x2189
        | 0x2460..=0x249b
        | 0x24ea..=0x24ff
        | 0x2776..=0x2793
        | 0x3192..=0x3195
        | 0x3220..=0x3229
        | 0x3248..=0x324f
        | 0x3251..=0x325f
        | 0x3280..=0x3289
        | 0x32b1..=0x32bf => {
            return Gc::No;
        }
        _ => {}
    }
    if ch.is_numeric() {
        return Gc::Nd;
    }
    if ch.is_alphabetic() {
        if ch.is_uppercase() {
            return Gc::Lu;
        }
        if ch.is_lowercase() {
            return Gc::Ll;
        }
        return Gc::Lo;
    }
    if ch.is_control() {
        return Gc::Cc;
    }
    if is_js_space(ch) {
        return Gc::Zs;
    }
    Gc::So
}

/// A character that may start a group name (ID_Start, `$`, `_`; approximate beyond Latin-1).
pub(crate) fn is_id_start(ch: char) -> bool {
    ch == '$' || ch == '_' || (ch.is_alphabetic() && !is_mark(ch))
}

/// A character that may continue a group name (ID_Continue, `$`, ZWNJ, ZWJ; approximate).
pub(crate) fn is_id_continue(ch: char) -> bool {
    is_id_start(ch)
        || ch == '\u{200c}'
        || ch == '\u{200d}'
        || ch.is_alphanumeric()
        || is_mark(ch)
        || general_category(ch) == Gc::Pc
}

/// `\p{L}` (approximate beyond Latin-1).
pub(crate) fn is_letter(ch: char) -> bool {
    L & bit(general_category(ch)) != 0
}

/// `\p{N}`.
pub(crate) fn is_number(ch: char) -> bool {
    ch.is_numeric()
}

/// `\p{Nd}` (approximate beyond Latin-1).
pub(crate) fn is_decimal_number(ch: char) -> bool {
    general_category(ch) == Gc::Nd
}

/// `\p{Mn}` (approximate).
pub(crate) fn is_nonspacing_mark(ch: char) -> bool {
    general_category(ch) == Gc::Mn
}

/// `\p{M}` (approximate).
pub(crate) fn is_mark(ch: char) -> bool {
    M & bit(general_category(ch)) != 0
}

/// `\p{Script=name}` for the scripts this module knows.
pub(crate) fn in_script(name: &str, ch: char) -> bool {
    let c = u32::from(ch);
    SCRIPTS
        .iter()
        .find(|(long, _, _)| *long == name)
        .is_some_and(|(_, _, ranges)| ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_categories_are_exact() {
        let gc = |c: char| general_category(c);
        assert_eq!(gc('a'), Gc::Ll);
        assert_eq!(gc('Z'), Gc::Lu);
        assert_eq!(gc('5'), Gc::Nd);
        assert_eq!(gc(' '), Gc::Zs);
        assert_eq!(gc('_'), Gc::Pc);
        assert_eq!(gc('-'), Gc::Pd);
        assert_eq!(gc('$'), Gc::Sc);
        assert_eq!(gc('+'), Gc::Sm);
        assert_eq!(gc('^'), Gc::Sk);
        assert_eq!(gc('('), Gc::Ps);
        assert_eq!(gc('}'), Gc::Pe);
        assert_eq!(gc('!'), Gc::Po);
        assert_eq!(gc('~'), Gc::Sm);
        assert_eq!(gc('\u{7f}'), Gc::Cc);
        assert_eq!(gc('é'), Gc::Ll);
        assert_eq!(gc('日'), Gc::Lo);
    }
}
