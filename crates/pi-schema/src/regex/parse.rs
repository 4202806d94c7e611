//! The ECMAScript pattern grammar, with the `u` flag (strict) or without it (Annex B), and V8's
//! `SyntaxError` messages. Sources are code points with `u`, UTF-16 units without.

use super::unicode::Property;

/// A parsed pattern.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Empty,
    Unit(u32),
    Set(Set),
    Start,
    End,
    WordBoundary {
        negate: bool,
    },
    /// A group; `index` is the capture number (from 1) of a capturing one.
    Group {
        index: Option<usize>,
        node: Box<Node>,
    },
    Look {
        behind: bool,
        negate: bool,
        node: Box<Node>,
    },
    BackRef(usize),
    /// `\k<name>` until the names are known (a reference may precede its group).
    NamedRef(Vec<u32>),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
        greedy: bool,
        /// The captures inside the repeated atom, reset at each iteration.
        captures: (usize, usize),
    },
}

/// A character class: units or code points in ranges and class escapes, possibly negated.
#[derive(Debug, Clone)]
pub(crate) struct Set {
    pub negate: bool,
    pub items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub(crate) enum Item {
    Range(u32, u32),
    Digit(bool),
    Word(bool),
    Space(bool),
    Property(Property, bool),
}

impl Set {
    pub(crate) fn contains(&self, c: u32) -> bool {
        self.items.iter().any(|item| item.contains(c)) != self.negate
    }

    fn dot() -> Set {
        Set {
            negate: true,
            items: vec![
                Item::Range(0x0a, 0x0a),
                Item::Range(0x0d, 0x0d),
                Item::Range(0x2028, 0x2029),
            ],
        }
    }
}

impl Item {
    fn contains(&self, c: u32) -> bool {
        match *self {
            Item::Range(lo, hi) => lo <= c && c <= hi,
            Item::Digit(neg) => (0x30..=0x39).contains(&c) != neg,
            Item::Word(neg) => is_word(c) != neg,
            Item::Space(neg) => is_space(c) != neg,
            Item::Property(p, neg) => p.contains(c) != neg,
        }
    }
}

/// `\w`: ASCII letters, digits and `_` (no `i` flag).
pub(crate) fn is_word(c: u32) -> bool {
    matches!(c, 0x30..=0x39 | 0x41..=0x5a | 0x61..=0x7a | 0x5f)
}

/// `\s`: WhiteSpace and LineTerminator.
fn is_space(c: u32) -> bool {
    char::from_u32(c).is_some_and(pi_js::is_whitespace)
}

type Fail = &'static str;

struct Parser<'a> {
    src: &'a [u32],
    i: usize,
    unicode: bool,
    /// Capturing groups in the whole pattern (a backreference may precede its group).
    total_groups: usize,
    /// Whether the pattern has a named group (then `\k` is a reference even without `u`).
    has_named: bool,
    next_group: usize,
    names: Vec<(Vec<u32>, usize)>,
    references: Vec<Vec<u32>>,
}

/// Parses `src`: the pattern and its number of capturing groups.
pub(crate) fn parse(src: &[u32], unicode: bool) -> Result<(Node, usize), Fail> {
    let (total_groups, has_named) = scan_groups(src);
    let mut p = Parser {
        src,
        i: 0,
        unicode,
        total_groups,
        has_named,
        next_group: 1,
        names: Vec::new(),
        references: Vec::new(),
    };
    let mut node = p.disjunction()?;
    if p.i < src.len() {
        return Err("Unmatched ')'");
    }
    for name in &p.references {
        if !p.names.iter().any(|(n, _)| n == name) {
            return Err("Invalid named capture referenced");
        }
    }
    resolve_names(&mut node, &p.names);
    Ok((node, p.next_group - 1))
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
    Items(Vec<Item>),
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

    fn disjunction(&mut self) -> Result<Node, Fail> {
        let mut alts = vec![self.alternative()?];
        while self.eat(0x7c) {
            alts.push(self.alternative()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(alts)
        })
    }

    fn alternative(&mut self) -> Result<Node, Fail> {
        let mut terms = Vec::new();
        while let Some(c) = self.peek() {
            if c == 0x7c || c == 0x29 {
                break;
            }
            if let Some(term) = self.term()? {
                terms.push(term);
            }
        }
        Ok(match terms.len() {
            0 => Node::Empty,
            1 => terms.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(terms),
        })
    }

    /// One term; `None` when a character was consumed without producing one (never, today).
    fn term(&mut self) -> Result<Option<Node>, Fail> {
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        let first_group = self.next_group;
        let (atom, quantifiable) = match c {
            0x5e => {
                self.i += 1;
                return Ok(Some(Node::Start));
            }
            0x24 => {
                self.i += 1;
                return Ok(Some(Node::End));
            }
            0x5c if matches!(self.peek_at(1), Some(0x62) | Some(0x42)) => {
                let negate = self.peek_at(1) == Some(0x42);
                self.i += 2;
                return Ok(Some(Node::WordBoundary { negate }));
            }
            0x28 => self.group()?,
            0x5b => {
                self.i += 1;
                (Node::Set(self.class()?), Quantifiable::Yes)
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
                (Node::Unit(c), Quantifiable::Yes)
            }
            0x7d | 0x5d => {
                if self.unicode {
                    return Err("Lone quantifier brackets");
                }
                self.i += 1;
                (Node::Unit(c), Quantifiable::Yes)
            }
            0x2e => {
                self.i += 1;
                (Node::Set(Set::dot()), Quantifiable::Yes)
            }
            0x5c => {
                self.i += 1;
                (self.atom_escape()?, Quantifiable::Yes)
            }
            _ => {
                self.i += 1;
                (Node::Unit(c), Quantifiable::Yes)
            }
        };
        let Some((min, max)) = self.quantifier()? else {
            return Ok(Some(atom));
        };
        if quantifiable == Quantifiable::Invalid {
            return Err("Invalid quantifier");
        }
        let greedy = !self.eat(0x3f);
        if let Some(max) = max
            && min > max
        {
            return Err("numbers out of order in {} quantifier");
        }
        Ok(Some(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
            greedy,
            captures: (first_group, self.next_group),
        }))
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

    fn group(&mut self) -> Result<(Node, Quantifiable), Fail> {
        self.i += 1;
        let mut index = None;
        let mut look = None;
        if self.eat(0x3f) {
            match (self.peek(), self.peek_at(1)) {
                (Some(0x3a), _) => self.i += 1,
                (Some(0x3d), _) | (Some(0x21), _) => {
                    look = Some((false, self.peek() == Some(0x21)));
                    self.i += 1;
                }
                (Some(0x3c), Some(0x3d)) | (Some(0x3c), Some(0x21)) => {
                    look = Some((true, self.peek_at(1) == Some(0x21)));
                    self.i += 2;
                }
                (Some(0x3c), _) => {
                    self.i += 1;
                    let name = self.group_name().ok_or("Invalid capture group name")?;
                    if self.names.iter().any(|(n, _)| *n == name) {
                        return Err("Duplicate capture group name");
                    }
                    index = Some(self.next_group);
                    self.names.push((name, self.next_group));
                    self.next_group += 1;
                }
                _ => return Err("Invalid group"),
            }
        } else {
            index = Some(self.next_group);
            self.next_group += 1;
        }
        let node = self.disjunction()?;
        if !self.eat(0x29) {
            return Err("Unterminated group");
        }
        Ok(match look {
            Some((behind, negate)) => {
                let quantifiable = if behind || self.unicode {
                    Quantifiable::Invalid
                } else {
                    Quantifiable::Yes
                };
                (
                    Node::Look {
                        behind,
                        negate,
                        node: Box::new(node),
                    },
                    quantifiable,
                )
            }
            None => (
                Node::Group {
                    index,
                    node: Box::new(node),
                },
                Quantifiable::Yes,
            ),
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
                super::unicode::is_id_start(ch)
            } else {
                super::unicode::is_id_continue(ch)
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

    fn class_escape_set(c: u32) -> Option<Item> {
        match c {
            0x64 => Some(Item::Digit(false)),
            0x44 => Some(Item::Digit(true)),
            0x77 => Some(Item::Word(false)),
            0x57 => Some(Item::Word(true)),
            0x73 => Some(Item::Space(false)),
            0x53 => Some(Item::Space(true)),
            _ => None,
        }
    }

    /// After `\p` or `\P` (with `u`): `{name}` or `{name=value}`.
    fn property(&mut self, negate: bool) -> Result<Item, Fail> {
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
        let property = Property::parse(&text).ok_or("Invalid property name")?;
        Ok(Item::Property(property, negate))
    }

    fn atom_escape(&mut self) -> Result<Node, Fail> {
        let Some(c) = self.peek() else {
            return Err("\\ at end of pattern");
        };
        if let Some(item) = Self::class_escape_set(c) {
            self.i += 1;
            return Ok(Node::Set(Set {
                negate: false,
                items: vec![item],
            }));
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
                    return Ok(Node::BackRef(n));
                }
                if self.unicode {
                    return Err("Invalid escape");
                }
                self.i = start;
                if c >= 0x38 {
                    self.i += 1;
                    return Ok(Node::Unit(c));
                }
                Ok(Node::Unit(self.octal()))
            }
            0x30 => {
                if self.peek_at(1).is_some_and(is_digit) {
                    if self.unicode {
                        return Err("Invalid decimal escape");
                    }
                    return Ok(Node::Unit(self.octal()));
                }
                self.i += 1;
                Ok(Node::Unit(0))
            }
            0x70 | 0x50 if self.unicode => {
                self.i += 1;
                let item = self.property(c == 0x50)?;
                Ok(Node::Set(Set {
                    negate: false,
                    items: vec![item],
                }))
            }
            0x6b if self.unicode || self.has_named => {
                self.i += 1;
                if !self.eat(0x3c) {
                    return Err("Invalid named reference");
                }
                let name = self.group_name().ok_or("Invalid named reference")?;
                self.references.push(name.clone());
                Ok(Node::NamedRef(name))
            }
            0x63 => {
                if let Some(l) = self.peek_at(1).filter(|&l| is_ascii_letter(l)) {
                    self.i += 2;
                    return Ok(Node::Unit(l % 32));
                }
                if self.unicode {
                    return Err("Invalid Unicode escape");
                }
                // `\c` without a letter is a backslash; the `c` is read next.
                Ok(Node::Unit(0x5c))
            }
            _ => {
                if let Some(v) = self.character_escape(c)? {
                    return Ok(Node::Unit(v));
                }
                if self.unicode && !(is_syntax_char(c) || c == 0x2f) {
                    return Err("Invalid escape");
                }
                self.i += 1;
                Ok(Node::Unit(c))
            }
        }
    }

    fn class(&mut self) -> Result<Set, Fail> {
        let negate = self.eat(0x5e);
        let mut items = Vec::new();
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
                    (ClassAtom::Unit(lo), ClassAtom::Unit(hi)) => {
                        if lo > hi {
                            return Err("Range out of order in character class");
                        }
                        items.push(Item::Range(lo, hi));
                    }
                    (a, b) => {
                        if self.unicode {
                            return Err("Invalid character class");
                        }
                        push_atom(&mut items, a);
                        items.push(Item::Range(0x2d, 0x2d));
                        push_atom(&mut items, b);
                    }
                }
            } else {
                push_atom(&mut items, a);
            }
        }
        Ok(Set { negate, items })
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
        if let Some(item) = Self::class_escape_set(e) {
            self.i += 1;
            return Ok(ClassAtom::Items(vec![item]));
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
                Ok(ClassAtom::Items(vec![self.property(e == 0x50)?]))
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

fn push_atom(items: &mut Vec<Item>, atom: ClassAtom) {
    match atom {
        ClassAtom::Unit(c) => items.push(Item::Range(c, c)),
        ClassAtom::Items(more) => items.extend(more),
    }
}

/// Replaces each `\k<name>` by a backreference to the group of that name.
fn resolve_names(node: &mut Node, names: &[(Vec<u32>, usize)]) {
    match node {
        Node::NamedRef(name) => {
            let index = names.iter().find(|(n, _)| n == name).map_or(0, |(_, i)| *i);
            *node = Node::BackRef(index);
        }
        Node::Group { node, .. } | Node::Look { node, .. } | Node::Repeat { node, .. } => {
            resolve_names(node, names);
        }
        Node::Concat(nodes) | Node::Alt(nodes) => {
            for n in nodes {
                resolve_names(n, names);
            }
        }
        Node::Empty
        | Node::Unit(_)
        | Node::Set(_)
        | Node::Start
        | Node::End
        | Node::WordBoundary { .. }
        | Node::BackRef(_) => {}
    }
}
