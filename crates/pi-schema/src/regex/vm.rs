//! A backtracking VM with ECMAScript's matching semantics: greedy and lazy repeats whose
//! iterations reset their captures and may not match empty once the minimum is met,
//! lookarounds that are never backtracked into, and lookbehinds that match right to left. The
//! backtrack stack lives on the heap, so input length never costs native stack.

use super::parse::{Node, Set, is_word};

#[derive(Debug)]
pub(crate) struct Program {
    insts: Vec<Inst>,
    sets: Vec<Set>,
    slots: usize,
    regs: usize,
    /// Whether every match starts at 0 (the pattern begins with `^` outside any alternation).
    anchored: bool,
}

#[derive(Debug, Clone, Copy)]
enum Single {
    Unit(u32),
    Set(usize),
}

#[derive(Debug)]
enum Inst {
    Single {
        what: Single,
        back: bool,
    },
    Start,
    End,
    WordBoundary(bool),
    Split {
        first: usize,
        second: usize,
    },
    Jmp(usize),
    Save(usize),
    BackRef {
        group: usize,
        back: bool,
    },
    /// A lookaround whose body follows and ends with `Match`; matching goes on at `next`.
    Look {
        negate: bool,
        next: usize,
    },
    RepStart(usize),
    /// One iteration of a repeat whose body follows; `exit` is after its `RepEnd`.
    RepLoop {
        reg: usize,
        min: u32,
        max: Option<u32>,
        greedy: bool,
        exit: usize,
        captures: (usize, usize),
    },
    RepEnd {
        reg: usize,
        min: u32,
        lp: usize,
    },
    /// A repeat of one character: no captures, never empty, so it needs no iteration state.
    RepSingle {
        what: Single,
        min: u32,
        max: Option<u32>,
        greedy: bool,
        back: bool,
    },
    Match,
}

struct Compiler {
    insts: Vec<Inst>,
    sets: Vec<Set>,
    regs: usize,
}

/// Compiles a parsed pattern with `groups` capturing groups.
pub(crate) fn compile(node: &Node, groups: usize) -> Program {
    let mut c = Compiler {
        insts: Vec::new(),
        sets: Vec::new(),
        regs: 0,
    };
    c.emit(node, false);
    c.insts.push(Inst::Match);
    let anchored = match node {
        Node::Start => true,
        Node::Concat(nodes) => matches!(nodes.first(), Some(Node::Start)),
        _ => false,
    };
    Program {
        insts: c.insts,
        sets: c.sets,
        slots: 2 * (groups + 1),
        regs: c.regs,
        anchored,
    }
}

impl Compiler {
    fn single(&mut self, node: &Node) -> Option<Single> {
        match node {
            Node::Unit(c) => Some(Single::Unit(*c)),
            Node::Set(set) => {
                self.sets.push(set.clone());
                Some(Single::Set(self.sets.len() - 1))
            }
            _ => None,
        }
    }

    fn emit(&mut self, node: &Node, back: bool) {
        match node {
            Node::Empty => {}
            Node::Unit(_) | Node::Set(_) => {
                if let Some(what) = self.single(node) {
                    self.insts.push(Inst::Single { what, back });
                }
            }
            Node::Start => self.insts.push(Inst::Start),
            Node::End => self.insts.push(Inst::End),
            Node::WordBoundary { negate } => self.insts.push(Inst::WordBoundary(*negate)),
            Node::Group { index, node } => match index {
                Some(i) => {
                    let (open, close) = if back {
                        (2 * i + 1, 2 * i)
                    } else {
                        (2 * i, 2 * i + 1)
                    };
                    self.insts.push(Inst::Save(open));
                    self.emit(node, back);
                    self.insts.push(Inst::Save(close));
                }
                None => self.emit(node, back),
            },
            Node::Look {
                behind,
                negate,
                node,
            } => {
                let at = self.insts.len();
                self.insts.push(Inst::Look {
                    negate: *negate,
                    next: 0,
                });
                self.emit(node, *behind);
                self.insts.push(Inst::Match);
                let end = self.insts.len();
                if let Some(Inst::Look { next, .. }) = self.insts.get_mut(at) {
                    *next = end;
                }
            }
            Node::BackRef(group) => self.insts.push(Inst::BackRef {
                group: *group,
                back,
            }),
            Node::NamedRef(_) => {}
            Node::Concat(nodes) => {
                if back {
                    for n in nodes.iter().rev() {
                        self.emit(n, back);
                    }
                } else {
                    for n in nodes {
                        self.emit(n, back);
                    }
                }
            }
            Node::Alt(alts) => {
                let mut jumps = Vec::new();
                for (i, alt) in alts.iter().enumerate() {
                    if i + 1 == alts.len() {
                        self.emit(alt, back);
                        break;
                    }
                    let split = self.insts.len();
                    self.insts.push(Inst::Split {
                        first: split + 1,
                        second: 0,
                    });
                    self.emit(alt, back);
                    jumps.push(self.insts.len());
                    self.insts.push(Inst::Jmp(0));
                    let here = self.insts.len();
                    if let Some(Inst::Split { second, .. }) = self.insts.get_mut(split) {
                        *second = here;
                    }
                }
                let end = self.insts.len();
                for j in jumps {
                    if let Some(Inst::Jmp(to)) = self.insts.get_mut(j) {
                        *to = end;
                    }
                }
            }
            Node::Repeat {
                node,
                min,
                max,
                greedy,
                captures,
            } => {
                if *max == Some(0) {
                    return;
                }
                if let Some(what) = self.single(node) {
                    self.insts.push(Inst::RepSingle {
                        what,
                        min: *min,
                        max: *max,
                        greedy: *greedy,
                        back,
                    });
                    return;
                }
                let reg = self.regs;
                self.regs += 1;
                self.insts.push(Inst::RepStart(reg));
                let lp = self.insts.len();
                self.insts.push(Inst::RepLoop {
                    reg,
                    min: *min,
                    max: *max,
                    greedy: *greedy,
                    exit: 0,
                    captures: *captures,
                });
                self.emit(node, back);
                self.insts.push(Inst::RepEnd { reg, min: *min, lp });
                let end = self.insts.len();
                if let Some(Inst::RepLoop { exit, .. }) = self.insts.get_mut(lp) {
                    *exit = end;
                }
            }
        }
    }
}

/// An entry of the backtrack stack: a choice to resume, or a state change to undo.
enum Bt {
    Resume {
        pc: usize,
        pos: usize,
    },
    Slot(usize, Option<usize>),
    Reg(usize, (u32, usize)),
    Slots(Vec<Option<usize>>),
    /// A greedy single-character repeat that can give back characters down to `floor`.
    GiveBack {
        pc: usize,
        pos: usize,
        floor: usize,
        back: bool,
    },
    /// A lazy single-character repeat (at `inst`) that can take one more character.
    TakeMore {
        inst: usize,
        pos: usize,
        count: u32,
    },
    /// A lazy repeat (its `RepLoop` at `lp`) that can run one more iteration.
    Iterate {
        lp: usize,
        pos: usize,
    },
}

struct Run<'a> {
    program: &'a Program,
    input: &'a [u32],
    slots: Vec<Option<usize>>,
    regs: Vec<(u32, usize)>,
}

impl Program {
    /// Whether the pattern matches anywhere in `input` (`RegExp.prototype.test`).
    pub(crate) fn search(&self, input: &[u32]) -> bool {
        let mut run = Run {
            program: self,
            input,
            slots: vec![None; self.slots],
            regs: vec![(0, 0); self.regs],
        };
        let last = if self.anchored { 0 } else { input.len() };
        for start in 0..=last {
            run.slots.fill(None);
            if run.run(0, start).is_some() {
                return true;
            }
        }
        false
    }

    fn single_matches(&self, what: Single, c: u32) -> bool {
        match what {
            Single::Unit(u) => u == c,
            Single::Set(i) => self.sets.get(i).is_some_and(|s| s.contains(c)),
        }
    }
}

impl Run<'_> {
    /// The position after reading one matching character at `pos` in the direction.
    fn step(&self, what: Single, pos: usize, back: bool) -> Option<usize> {
        let (c, next) = if back {
            (*self.input.get(pos.checked_sub(1)?)?, pos - 1)
        } else {
            (*self.input.get(pos)?, pos + 1)
        };
        self.program.single_matches(what, c).then_some(next)
    }

    fn clear_captures(&mut self, (first, last): (usize, usize), stack: &mut Vec<Bt>) {
        for slot in 2 * first..(2 * last).min(self.slots.len()) {
            if let Some(old) = self.slots[slot].take() {
                stack.push(Bt::Slot(slot, Some(old)));
            }
        }
    }

    fn set_reg(&mut self, reg: usize, value: (u32, usize), stack: &mut Vec<Bt>) {
        stack.push(Bt::Reg(reg, self.regs[reg]));
        self.regs[reg] = value;
    }

    /// Runs from `pc` at `pos`: the end position of a match, with the captures in `slots`.
    fn run(&mut self, start_pc: usize, start_pos: usize) -> Option<usize> {
        let insts = &self.program.insts;
        let mut stack: Vec<Bt> = Vec::new();
        let mut pc = start_pc;
        let mut pos = start_pos;
        loop {
            let ok = match insts.get(pc) {
                None | Some(Inst::Match) => return Some(pos),
                Some(&Inst::Single { what, back }) => match self.step(what, pos, back) {
                    Some(next) => {
                        pos = next;
                        pc += 1;
                        true
                    }
                    None => false,
                },
                Some(Inst::Start) => {
                    pc += 1;
                    pos == 0
                }
                Some(Inst::End) => {
                    pc += 1;
                    pos == self.input.len()
                }
                Some(&Inst::WordBoundary(negate)) => {
                    let before = pos > 0 && is_word(self.input[pos - 1]);
                    let after = self.input.get(pos).is_some_and(|&c| is_word(c));
                    pc += 1;
                    (before != after) != negate
                }
                Some(&Inst::Split { first, second }) => {
                    stack.push(Bt::Resume { pc: second, pos });
                    pc = first;
                    true
                }
                Some(&Inst::Jmp(to)) => {
                    pc = to;
                    true
                }
                Some(&Inst::Save(slot)) => {
                    stack.push(Bt::Slot(slot, self.slots[slot]));
                    self.slots[slot] = Some(pos);
                    pc += 1;
                    true
                }
                Some(&Inst::BackRef { group, back }) => {
                    let start = self.slots.get(2 * group).copied().flatten();
                    let end = self.slots.get(2 * group + 1).copied().flatten();
                    pc += 1;
                    match (start, end) {
                        (Some(s), Some(e)) if e >= s => {
                            let len = e - s;
                            let captured = &self.input[s..e];
                            if back {
                                match pos.checked_sub(len) {
                                    Some(from) if &self.input[from..pos] == captured => {
                                        pos = from;
                                        true
                                    }
                                    _ => false,
                                }
                            } else if pos + len <= self.input.len()
                                && &self.input[pos..pos + len] == captured
                            {
                                pos += len;
                                true
                            } else {
                                false
                            }
                        }
                        _ => true,
                    }
                }
                Some(&Inst::Look { negate, next }) => {
                    let snapshot = self.slots.clone();
                    let matched = self.run(pc + 1, pos).is_some();
                    pc = next;
                    if negate {
                        self.slots = snapshot;
                        !matched
                    } else {
                        if matched {
                            stack.push(Bt::Slots(snapshot));
                        }
                        matched
                    }
                }
                Some(&Inst::RepStart(reg)) => {
                    self.set_reg(reg, (0, pos), &mut stack);
                    pc += 1;
                    true
                }
                Some(&Inst::RepLoop {
                    reg,
                    min,
                    max,
                    greedy,
                    exit,
                    captures,
                }) => {
                    let (count, _) = self.regs[reg];
                    if max.is_some_and(|m| count >= m) {
                        pc = exit;
                    } else if count < min || greedy {
                        if count >= min {
                            stack.push(Bt::Resume { pc: exit, pos });
                        }
                        self.clear_captures(captures, &mut stack);
                        self.set_reg(reg, (count, pos), &mut stack);
                        pc += 1;
                    } else {
                        stack.push(Bt::Iterate { lp: pc, pos });
                        pc = exit;
                    }
                    true
                }
                Some(&Inst::RepEnd { reg, min, lp }) => {
                    let (count, start) = self.regs[reg];
                    if count >= min && pos == start {
                        false
                    } else {
                        self.set_reg(reg, (count + 1, start), &mut stack);
                        pc = lp;
                        true
                    }
                }
                Some(&Inst::RepSingle {
                    what,
                    min,
                    max,
                    greedy,
                    back,
                }) => {
                    let mut count = 0u32;
                    let mut p = pos;
                    let mut ok = true;
                    while count < min {
                        match self.step(what, p, back) {
                            Some(next) => {
                                p = next;
                                count += 1;
                            }
                            None => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    if ok {
                        if greedy {
                            let floor = p;
                            while max.is_none_or(|m| count < m) {
                                match self.step(what, p, back) {
                                    Some(next) => {
                                        p = next;
                                        count += 1;
                                    }
                                    None => break,
                                }
                            }
                            if p != floor {
                                stack.push(Bt::GiveBack {
                                    pc: pc + 1,
                                    pos: p,
                                    floor,
                                    back,
                                });
                            }
                        } else if max.is_none_or(|m| count < m) {
                            stack.push(Bt::TakeMore {
                                inst: pc,
                                pos: p,
                                count,
                            });
                        }
                        pos = p;
                        pc += 1;
                    }
                    ok
                }
            };
            if ok {
                continue;
            }
            // Backtrack: undo state changes until a choice point resumes.
            loop {
                match stack.pop() {
                    None => return None,
                    Some(Bt::Resume { pc: p, pos: q }) => {
                        pc = p;
                        pos = q;
                        break;
                    }
                    Some(Bt::Slot(slot, old)) => self.slots[slot] = old,
                    Some(Bt::Reg(reg, old)) => self.regs[reg] = old,
                    Some(Bt::Slots(old)) => self.slots = old,
                    Some(Bt::GiveBack {
                        pc: p,
                        pos: q,
                        floor,
                        back,
                    }) => {
                        let next = if back { q + 1 } else { q - 1 };
                        if next != floor {
                            stack.push(Bt::GiveBack {
                                pc: p,
                                pos: next,
                                floor,
                                back,
                            });
                        }
                        pc = p;
                        pos = next;
                        break;
                    }
                    Some(Bt::TakeMore {
                        inst,
                        pos: q,
                        count,
                    }) => {
                        let Some(&Inst::RepSingle {
                            what, max, back, ..
                        }) = insts.get(inst)
                        else {
                            continue;
                        };
                        let Some(next) = self.step(what, q, back) else {
                            continue;
                        };
                        if max.is_none_or(|m| count + 1 < m) {
                            stack.push(Bt::TakeMore {
                                inst,
                                pos: next,
                                count: count + 1,
                            });
                        }
                        pc = inst + 1;
                        pos = next;
                        break;
                    }
                    Some(Bt::Iterate { lp, pos: q }) => {
                        let Some(&Inst::RepLoop { reg, captures, .. }) = insts.get(lp) else {
                            continue;
                        };
                        let (count, _) = self.regs[reg];
                        self.clear_captures(captures, &mut stack);
                        self.set_reg(reg, (count, q), &mut stack);
                        pc = lp + 1;
                        pos = q;
                        break;
                    }
                }
            }
        }
    }
}
