//! The ECMAScript pattern grammar, with the `u` flag (strict) or without it (Annex B), checked
//! the way V8 checks it, for V8's `SyntaxError` messages and for the patterns V8 rejects that
//! `regress` accepts (pattern modifiers such as `(?i:…)`, which Node 22 does not have). Sources
//! are code points with `u`, UTF-16 units without. Matching is `regress`'s.

use super::unicode;

type Fail = &'static str;

struct Parser<'a> {
    src: &'a [u32],
    i: usize,
    unicode: bool,
    /// Capturing groups in the whole pattern (a backreference may precede its group).
    total_groups: usize,
    /// Whether the pattern has a named group (then `\k` is a reference even without `u`).
    has_named: bool,
    names: Vec<Vec<u32>>,
    references: Vec<Vec<u32>>,
}

/// Checks `src`: `Err` with V8's message when `new RegExp` would throw.
pub(crate) fn check(src: &[u32], unicode: bool) -> Result<(), Fail> {
    let (total_groups, has_named) = scan_groups(src);
    let mut p = Parser {
        src,
        i: 0,
        unicode,
        total_groups,
        has_named,
        names: Vec::new(),
        references: Vec::new(),
    };
    p.disjunction()?;
    if p.i < src.len() {
        return Err("Unmatched ')'");
    }
    for name in &p.references {
        if !p.names.contains(name) {
            return Err("Invalid named capture referenced");
        }
    }
    Ok(())
}

/// Counts capturing groups ahead of parsing, skipping escapes and classes.
fn scan_groups(src: &[u32]) -> (usize, bool) {
    let mut count = 0;
    let mut named = false;
    let mut in_class = false;
    let mut i = 0;
    while i < src.len() {
        match src[i] {
            0x5c => i += 1,
            0x5b => in_class = true,
            0x5d => in_class = false,
            0x28 if !in_class => {
                if src.get(i + 1) != Some(&0x3f) {
                    count += 1;
                } else if src.get(i + 2) == Some(&0x3c)
                    && !matches!(src.get(i + 3), Some(&0x3d) | Some(&0x21))
                {
                    count += 1;
                    named = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (count, named)
}

fn is_syntax_char(c: u32) -> bool {
    matches!(
        c,
        0x5e | 0x24
            | 0x5c
            | 0x2e
            | 0x2a
            | 0x2b
            | 0x3f
            | 0x28
            | 0x29
            | 0x5b
            | 0x5d
            | 0x7b
            | 0x7d
            | 0x7c
    )
}

fn hex(c: u32) -> Option<u32> {
    char::from_u32(c).and_then(|c| c.to_digit(16))
}

fn is_ascii_letter(c: u32) -> bool {
    matches!(c, 0x41..=0x5a | 0x61..=0x7a)
}

fn is_digit(c: u32) -> bool {
    (0x30..=0x39).contains(&c)
}

/// A class atom: one character, or a class escape that stands for a set.
enum ClassAtom {
    Unit(u32),
    Set,
}

/// What may follow an atom.
#[derive(PartialEq)]
enum Quantifiable {
    Yes,
    /// A lookbehind, or any lookaround with `u`.
    Invalid,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u32> {
        self.src.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u32> {
        self.src.get(self.i + k).copied()
    }

    fn eat(&mut self, c: u32) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn disjunction(&mut self) -> Result<(), Fail> {
        self.alternative()?;
        while self.eat(0x7c) {
            self.alternative()?;
        }
        Ok(())
    }

    fn alternative(&mut self) -> Result<(), Fail> {
        while let Some(c) = self.peek() {
            if c == 0x7c || c == 0x29 {
                break;
            }
            self.term()?;
        }
        Ok(())
    }

    /// One term, with its quantifier.
    fn term(&mut self) -> Result<(), Fail> {
        let Some(c) = self.peek() else {
            return Ok(());
        };
        let quantifiable = match c {
            // Assertions: `^`, `$`, `\b`, `\B`.
            0x5e | 0x24 => {
                self.i += 1;
                return Ok(());
            }
            0x5c if matches!(self.peek_at(1), Some(0x62) | Some(0x42)) => {
                self.i += 2;
                return Ok(());
            }
            0x28 => self.group()?,
            0x5b => {
                self.i += 1;
                self.class()?;
                Quantifiable::Yes
            }
            0x2a | 0x2b | 0x3f => return Err("Nothing to repeat"),
            0x7b => {
                if self.braces_at(self.i).is_some() {
                    return Err("Nothing to repeat");
                }
                if self.unicode {
                    return Err("Lone quantifier brackets");
                }
                self.i += 1;
                Quantifiable::Yes
            }
            0x7d | 0x5d => {
                if self.unicode {
                    return Err("Lone quantifier brackets");
                }
                self.i += 1;
                Quantifiable::Yes
            }
            0x5c => {
                self.i += 1;
                self.atom_escape()?;
                Quantifiable::Yes
            }
            _ => {
                self.i += 1;
                Quantifiable::Yes
            }
        };
        let Some((min, max)) = self.quantifier()? else {
            return Ok(());
        };
        if quantifiable == Quantifiable::Invalid {
            return Err("Invalid quantifier");
        }
        self.eat(0x3f);
        if let Some(max) = max
            && min > max
        {
            return Err("numbers out of order in {} quantifier");
        }
        Ok(())
    }

    /// A quantifier after an atom, if one follows.
    fn quantifier(&mut self) -> Result<Option<(u32, Option<u32>)>, Fail> {
        match self.peek() {
            Some(0x2a) => {
                self.i += 1;
                Ok(Some((0, None)))
            }
            Some(0x2b) => {
                self.i += 1;
                Ok(Some((1, None)))
            }
            Some(0x3f) => {
                self.i += 1;
                Ok(Some((0, Some(1))))
            }
            Some(0x7b) => match self.braces_at(self.i) {
                Some((min, max, end)) => {
                    self.i = end;
                    Ok(Some((min, max)))
                }
                None if self.unicode => Err("Incomplete quantifier"),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// `{n}`, `{n,}` or `{n,m}` at `at`: bounds and the index after `}`.
    fn braces_at(&self, at: usize) -> Option<(u32, Option<u32>, usize)> {
        let mut i = at + 1;
        let number = |i: &mut usize| -> Option<u32> {
            let start = *i;
            let mut v: u32 = 0;
            while let Some(&c) = self.src.get(*i) {
                if !is_digit(c) {
                    break;
                }
                v = v.saturating_mul(10).saturating_add(c - 0x30);
                *i += 1;
            }
            (*i > start).then_some(v)
        };
        let min = number(&mut i)?;
        let max = if self.src.get(i) == Some(&0x2c) {
            i += 1;
            if self.src.get(i) == Some(&0x7d) {
                None
            } else {
                Some(number(&mut i)?)
            }
        } else {
            Some(min)
        };
        (self.src.get(i) == Some(&0x7d)).then_some((min, max.filter(|&m| m != u32::MAX), i + 1))
    }

    fn group(&mut self) -> Result<Quantifiable, Fail> {
        self.i += 1;
        let mut look = None;
        if self.eat(0x3f) {
            match (self.peek(), self.peek_at(1)) {
                (Some(0x3a), _) => self.i += 1,
                (Some(0x3d), _) | (Some(0x21), _) => {
                    look = Some(false);
                    self.i += 1;
                }
                (Some(0x3c), Some(0x3d)) | (Some(0x3c), Some(0x21)) => {
                    look = Some(true);
                    self.i += 2;
                }
                (Some(0x3c), _) => {
                    self.i += 1;
                    let name = self.group_name().ok_or("Invalid capture group name")?;
                    if self.names.contains(&name) {
                        return Err("Duplicate capture group name");
                    }
                    self.names.push(name);
                }
                _ => return Err("Invalid group"),
            }
        }
        self.disjunction()?;
        if !self.eat(0x29) {
            return Err("Unterminated group");
        }
        Ok(match look {
            Some(behind) if behind || self.unicode => Quantifiable::Invalid,
            _ => Quantifiable::Yes,
        })
    }

    /// A group name up to and including `>`: an identifier, possibly with `\u` escapes.
    fn group_name(&mut self) -> Option<Vec<u32>> {
        let mut name = Vec::new();
        loop {
            let mut c = self.peek()?;
            self.i += 1;
            if c == 0x3e {
                break;
            }
            if c == 0x5c {
                if !self.eat(0x75) {
                    return None;
                }
                c = self.unicode_escape_in_name()?;
            } else if !self.unicode && (0xd800..0xdc00).contains(&c) {
                // A surrogate pair in a name is one code point even without `u`.
                if let Some(lo) = self.peek().filter(|lo| (0xdc00..0xe000).contains(lo)) {
                    self.i += 1;
                    c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                }
            }
            let ch = char::from_u32(c)?;
            let ok = if name.is_empty() {
                unicode::is_id_start(ch)
            } else {
                unicode::is_id_continue(ch)
            };
            if !ok {
                return None;
            }
            name.push(c);
        }
        (!name.is_empty()).then_some(name)
    }

    fn unicode_escape_in_name(&mut self) -> Option<u32> {
        if self.eat(0x7b) {
            let mut v: u32 = 0;
            let start = self.i;
            while let Some(d) = self.peek().and_then(hex) {
                v = v.checked_mul(16)?.checked_add(d)?;
                self.i += 1;
            }
            if self.i == start || !self.eat(0x7d) || v > 0x10ffff {
                return None;
            }
            return Some(v);
        }
        let v = self.hex4()?;
        if (0xd800..0xdc00).contains(&v)
            && self.peek() == Some(0x5c)
            && self.peek_at(1) == Some(0x75)
        {
            let save = self.i;
            self.i += 2;
            if let Some(lo) = self.hex4().filter(|lo| (0xdc00..0xe000).contains(lo)) {
                return Some(0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00));
            }
            self.i = save;
        }
        Some(v)
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut v = 0;
        for k in 0..4 {
            v = v * 16 + hex(self.peek_at(k)?)?;
        }
        self.i += 4;
        Some(v)
    }

    /// `\u` after the backslash and `u`: the code unit or code point, or `None` if malformed.
    fn unicode_escape(&mut self) -> Option<u32> {
        if self.unicode && self.peek() == Some(0x7b) {
            let save = self.i;
            self.i += 1;
            let mut v: u32 = 0;
            let start = self.i;
            while let Some(d) = self.peek().and_then(hex) {
                v = v.saturating_mul(16).saturating_add(d);
                self.i += 1;
            }
            if self.i == start || !self.eat(0x7d) || v > 0x10ffff {
                self.i = save;
                return None;
            }
            return Some(v);
        }
        let v = self.hex4()?;
        if self.unicode
            && (0xd800..0xdc00).contains(&v)
            && self.peek() == Some(0x5c)
            && self.peek_at(1) == Some(0x75)
        {
            let save = self.i;
            self.i += 2;
            if let Some(lo) = self.hex4().filter(|lo| (0xdc00..0xe000).contains(lo)) {
                return Some(0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00));
            }
            self.i = save;
        }
        Some(v)
    }

    /// Annex B's legacy octal escape, at the first digit.
    fn octal(&mut self) -> u32 {
        let mut v = 0;
        let first = self.peek().unwrap_or(0x30);
        let limit = if first <= 0x33 { 3 } else { 2 };
        for _ in 0..limit {
            match self.peek() {
                Some(c) if (0x30..=0x37).contains(&c) => {
                    v = v * 8 + (c - 0x30);
                    self.i += 1;
                }
                _ => break,
            }
        }
        v
    }

    /// The escapes shared by atoms and classes: control, hex and unicode escapes.
    /// `Ok(None)` when `c` is not one of them.
    fn character_escape(&mut self, c: u32) -> Result<Option<u32>, Fail> {
        let control = match c {
            0x66 => Some(0x0c),
            0x6e => Some(0x0a),
            0x72 => Some(0x0d),
            0x74 => Some(0x09),
            0x76 => Some(0x0b),
            _ => None,
        };
        if let Some(v) = control {
            self.i += 1;
            return Ok(Some(v));
        }
        match c {
            0x78 => {
                self.i += 1;
                match (self.peek().and_then(hex), self.peek_at(1).and_then(hex)) {
                    (Some(a), Some(b)) => {
                        self.i += 2;
                        Ok(Some(a * 16 + b))
                    }
                    _ if self.unicode => Err("Invalid escape"),
                    _ => Ok(Some(0x78)),
                }
            }
            0x75 => {
                self.i += 1;
                match self.unicode_escape() {
                    Some(v) => Ok(Some(v)),
                    None if self.unicode => Err("Invalid Unicode escape"),
                    None => Ok(Some(0x75)),
                }
            }
            _ => Ok(None),
        }
    }

    /// `\d`, `\D`, `\w`, `\W`, `\s`, `\S`.
    fn is_class_escape(c: u32) -> bool {
        matches!(c, 0x64 | 0x44 | 0x77 | 0x57 | 0x73 | 0x53)
    }

    /// After `\p` or `\P` (with `u`): `{name}` or `{name=value}`. The value of a `Script` is
    /// left to `regress`, which knows every script.
    fn property(&mut self) -> Result<(), Fail> {
        if !self.eat(0x7b) {
            return Err("Invalid property name");
        }
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == 0x7d {
                break;
            }
            self.i += 1;
        }
        if self.peek() != Some(0x7d) {
            return Err("Invalid property name");
        }
        let text: String = self.src[start..self.i]
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        self.i += 1;
        if !unicode::is_property(&text) {
            return Err("Invalid property name");
        }
        Ok(())
    }

    fn atom_escape(&mut self) -> Result<(), Fail> {
        let Some(c) = self.peek() else {
            return Err("\\ at end of pattern");
        };
        if Self::is_class_escape(c) {
            self.i += 1;
            return Ok(());
        }
        match c {
            0x31..=0x39 => {
                let start = self.i;
                let mut n: usize = 0;
                while let Some(d) = self.peek().filter(|&d| is_digit(d)) {
                    n = n.saturating_mul(10).saturating_add((d - 0x30) as usize);
                    self.i += 1;
                }
                if n <= self.total_groups {
                    return Ok(());
                }
                if self.unicode {
                    return Err("Invalid escape");
                }
                self.i = start;
                if c >= 0x38 {
                    self.i += 1;
                    return Ok(());
                }
                self.octal();
                Ok(())
            }
            0x30 => {
                if self.peek_at(1).is_some_and(is_digit) {
                    if self.unicode {
                        return Err("Invalid decimal escape");
                    }
                    self.octal();
                    return Ok(());
                }
                self.i += 1;
                Ok(())
            }
            0x70 | 0x50 if self.unicode => {
                self.i += 1;
                self.property()
            }
            0x6b if self.unicode || self.has_named => {
                self.i += 1;
                if !self.eat(0x3c) {
                    return Err("Invalid named reference");
                }
                let name = self.group_name().ok_or("Invalid named reference")?;
                self.references.push(name);
                Ok(())
            }
            0x63 => {
                if self.peek_at(1).is_some_and(is_ascii_letter) {
                    self.i += 2;
                    return Ok(());
                }
                if self.unicode {
                    return Err("Invalid Unicode escape");
                }
                // `\c` without a letter is a backslash; the `c` is read next.
                Ok(())
            }
            _ => {
                if self.character_escape(c)?.is_some() {
                    return Ok(());
                }
                if self.unicode && !(is_syntax_char(c) || c == 0x2f) {
                    return Err("Invalid escape");
                }
                self.i += 1;
                Ok(())
            }
        }
    }

    fn class(&mut self) -> Result<(), Fail> {
        self.eat(0x5e);
        loop {
            let Some(c) = self.peek() else {
                return Err("Unterminated character class");
            };
            if c == 0x5d {
                self.i += 1;
                break;
            }
            let a = self.class_atom()?;
            if self.peek() == Some(0x2d) && self.peek_at(1).is_some_and(|c| c != 0x5d) {
                self.i += 1;
                if self.peek().is_none() {
                    return Err("Unterminated character class");
                }
                let b = self.class_atom()?;
                match (a, b) {
                    (ClassAtom::Unit(lo), ClassAtom::Unit(hi)) if lo > hi => {
                        return Err("Range out of order in character class");
                    }
                    (ClassAtom::Unit(_), ClassAtom::Unit(_)) => {}
                    // A set at either end makes the `-` a character (an error with `u`).
                    _ if self.unicode => return Err("Invalid character class"),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn class_atom(&mut self) -> Result<ClassAtom, Fail> {
        let Some(c) = self.peek() else {
            return Err("Unterminated character class");
        };
        self.i += 1;
        if c != 0x5c {
            return Ok(ClassAtom::Unit(c));
        }
        let Some(e) = self.peek() else {
            return Err("\\ at end of pattern");
        };
        if Self::is_class_escape(e) {
            self.i += 1;
            return Ok(ClassAtom::Set);
        }
        match e {
            0x62 => {
                self.i += 1;
                Ok(ClassAtom::Unit(0x08))
            }
            0x2d => {
                self.i += 1;
                Ok(ClassAtom::Unit(0x2d))
            }
            0x70 | 0x50 if self.unicode => {
                self.i += 1;
                self.property()?;
                Ok(ClassAtom::Set)
            }
            0x30..=0x39 => {
                if self.unicode {
                    if e == 0x30 && !self.peek_at(1).is_some_and(is_digit) {
                        self.i += 1;
                        return Ok(ClassAtom::Unit(0));
                    }
                    return Err("Invalid class escape");
                }
                if e >= 0x38 {
                    self.i += 1;
                    return Ok(ClassAtom::Unit(e));
                }
                Ok(ClassAtom::Unit(self.octal()))
            }
            0x63 => {
                let next = self.peek_at(1);
                if let Some(l) = next.filter(|&l| is_ascii_letter(l)) {
                    self.i += 2;
                    return Ok(ClassAtom::Unit(l % 32));
                }
                if self.unicode {
                    return Err("Invalid Unicode escape");
                }
                if let Some(l) = next.filter(|&l| is_digit(l) || l == 0x5f) {
                    self.i += 2;
                    return Ok(ClassAtom::Unit(l % 32));
                }
                Ok(ClassAtom::Unit(0x5c))
            }
            _ => {
                if let Some(v) = self.character_escape(e)? {
                    return Ok(ClassAtom::Unit(v));
                }
                if self.unicode && !(is_syntax_char(e) || e == 0x2f) {
                    return Err("Invalid escape");
                }
                self.i += 1;
                Ok(ClassAtom::Unit(e))
            }
        }
    }
}
