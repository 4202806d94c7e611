//! Reading the model's output as it streams: a text answer, or one tool call in the form the
//! grammar allows (`<tool_call>{"name": "...", "arguments": {...}}</tool_call>`). The first
//! character decides, as in the grammar: `<` starts a call, anything else an answer. Without
//! tools there is no grammar and everything is text.
//!
//! An answer ends where it starts writing a call of its own (`<tool_call>` inside the text):
//! small models primed with example calls tend to append one, which the grammar cannot turn
//! into a real call any more. The consumer stops generation when [`OutputParser::ended`].

use crate::prompt::CALL_OPEN;

/// What the consumer should emit next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    TextStart,
    Text(String),
    /// The call's tool name is known.
    CallStart {
        name: String,
    },
    /// More of the call's `arguments` JSON.
    CallArgs(String),
}

/// How the output ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Nothing but whitespace.
    Empty,
    Text(String),
    /// A call; `complete` is false when the output stopped inside its arguments.
    Call {
        name: String,
        arguments: String,
        complete: bool,
    },
    /// Output that began like a call but never named a tool (the grammar prevents this).
    Malformed(String),
}

#[derive(Debug)]
enum State {
    /// Only whitespace so far (dropped: answers start at their first visible character).
    Start,
    Text {
        all: String,
        /// The tail that may be the start of `<tool_call>`, not yet emitted.
        held: String,
        ended: bool,
    },
    Call(Call),
}

#[derive(Debug, Default)]
struct Call {
    /// Everything after the first `<`, up to where the arguments begin.
    head: String,
    name: Option<String>,
    args: String,
    depth: usize,
    in_string: bool,
    escaped: bool,
    started: bool,
    done: bool,
}

#[derive(Debug)]
pub struct OutputParser {
    tools: bool,
    state: State,
}

impl OutputParser {
    /// `tools`: whether the request declared tools (and so ran under the grammar).
    pub fn new(tools: bool) -> OutputParser {
        OutputParser {
            tools,
            state: State::Start,
        }
    }

    /// Feeds a decoded chunk; returns what it adds to the stream.
    pub fn push(&mut self, chunk: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut args = String::new();
        for c in chunk.chars() {
            match &mut self.state {
                State::Start if c.is_whitespace() => {}
                State::Start if self.tools && c == '<' => {
                    self.state = State::Call(Call {
                        head: c.to_string(),
                        ..Call::default()
                    });
                }
                State::Start => {
                    out.push(Piece::TextStart);
                    self.state = State::Text {
                        all: String::new(),
                        held: String::new(),
                        ended: false,
                    };
                    self.text_char(c, &mut text);
                }
                State::Text { .. } => self.text_char(c, &mut text),
                State::Call(call) => {
                    if let Some(name) = call.feed(c, &mut args) {
                        out.push(Piece::CallStart { name });
                    }
                }
            }
        }
        if !text.is_empty() {
            out.push(Piece::Text(text));
        }
        if !args.is_empty() {
            out.push(Piece::CallArgs(args));
        }
        out
    }

    /// One character of an answer, into `emit` unless held back or past the end.
    fn text_char(&mut self, c: char, emit: &mut String) {
        let State::Text { all, held, ended } = &mut self.state else {
            return;
        };
        if *ended {
            return;
        }
        if !self.tools {
            all.push(c);
            emit.push(c);
            return;
        }
        held.push(c);
        if held == CALL_OPEN {
            held.clear();
            *ended = true;
            return;
        }
        while !CALL_OPEN.starts_with(held.as_str()) {
            let first = held.remove(0);
            all.push(first);
            emit.push(first);
        }
    }

    /// Whether the answer is over (it began a call of its own); what follows is ignored.
    pub fn ended(&self) -> bool {
        matches!(self.state, State::Text { ended: true, .. })
    }

    /// Text held back at the end of the output (it turned out not to be a call marker).
    pub fn flush(&mut self) -> Option<Piece> {
        let State::Text { all, held, .. } = &mut self.state else {
            return None;
        };
        if held.is_empty() {
            return None;
        }
        all.push_str(held);
        Some(Piece::Text(std::mem::take(held)))
    }

    pub fn finish(self) -> Parsed {
        match self.state {
            State::Start => Parsed::Empty,
            State::Text { all, .. } => Parsed::Text(all),
            State::Call(call) => match call.name {
                Some(name) => Parsed::Call {
                    name,
                    arguments: call.args,
                    complete: call.done,
                },
                None => Parsed::Malformed(call.head),
            },
        }
    }
}

impl Call {
    /// One character; returns the tool name the moment it is complete. Argument characters
    /// are appended to `args`.
    fn feed(&mut self, c: char, args: &mut String) -> Option<String> {
        if self.done {
            return None;
        }
        if self.started {
            self.args.push(c);
            args.push(c);
            self.scan(c);
            return None;
        }
        self.head.push(c);
        if self.name.is_none() {
            let name = name_in(&self.head);
            self.name = name.clone();
            return name;
        }
        // After the name: the arguments start at the `{` following `"arguments"`.
        if c == '{'
            && let Some(i) = self.head.find("\"arguments\"")
            && self.head[i..].contains(':')
        {
            self.started = true;
            self.args.push(c);
            args.push(c);
            self.depth = 1;
        }
        None
    }

    /// Tracks JSON nesting (outside strings) to see where the arguments object ends.
    fn scan(&mut self, c: char) {
        if self.in_string {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                '"' => self.in_string = false,
                _ => {}
            }
            return;
        }
        match c {
            '"' => self.in_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' => {
                self.depth = self.depth.saturating_sub(1);
                self.done = self.depth == 0;
            }
            _ => {}
        }
    }
}

/// The tool name in `<tool_call>{"name": "x"` once its closing quote is there.
fn name_in(head: &str) -> Option<String> {
    let rest = head.strip_prefix(CALL_OPEN)?;
    let after_key = &rest[rest.find("\"name\"")? + "\"name\"".len()..];
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let body = after_colon.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return serde_json::from_str(&after_colon[..i + 2]).ok(),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tools: bool, chunks: &[&str]) -> (Vec<Piece>, Parsed) {
        let mut p = OutputParser::new(tools);
        let pieces = chunks.iter().flat_map(|c| p.push(c)).collect();
        (pieces, p.finish())
    }

    #[test]
    fn text_answers_stream_from_their_first_visible_character() {
        let (pieces, parsed) = run(true, &["\n ", "Paris", " is", ""]);
        assert_eq!(
            pieces,
            vec![
                Piece::TextStart,
                Piece::Text("Paris".into()),
                Piece::Text(" is".into()),
            ]
        );
        assert_eq!(parsed, Parsed::Text("Paris is".into()));
    }

    #[test]
    fn an_answer_ends_where_it_starts_a_call_of_its_own() {
        let mut p = OutputParser::new(true);
        let mut pieces = Vec::new();
        for chunk in ["Rome.", " a<b", " <tool", "_call>\n{\"name\""] {
            pieces.extend(p.push(chunk));
        }
        assert!(p.ended());
        assert_eq!(p.flush(), None);
        assert_eq!(
            pieces,
            vec![
                Piece::TextStart,
                Piece::Text("Rome.".into()),
                Piece::Text(" a<b".into()),
                Piece::Text(" ".into()),
            ]
        );
        assert_eq!(p.finish(), Parsed::Text("Rome. a<b ".into()));
        let mut held = OutputParser::new(true);
        held.push("x <tool");
        assert!(!held.ended());
        assert_eq!(held.flush(), Some(Piece::Text("<tool".into())));
        assert_eq!(held.finish(), Parsed::Text("x <tool".into()));
    }

    #[test]
    fn without_tools_a_leading_angle_bracket_is_text() {
        let (_, parsed) = run(false, &["<b>hi</b>"]);
        assert_eq!(parsed, Parsed::Text("<b>hi</b>".into()));
    }

    #[test]
    fn a_call_streams_its_name_then_only_the_arguments_json() {
        let (pieces, parsed) = run(
            true,
            &[
                "<tool",
                "_call>\n{\"na",
                "me\": \"ls\"",
                ", \"arguments\": {\"pa",
                "th\": \"a}b\\\"\"}",
                "}\n</tool_call>",
            ],
        );
        assert_eq!(
            pieces,
            vec![
                Piece::CallStart { name: "ls".into() },
                Piece::CallArgs("{\"pa".into()),
                Piece::CallArgs("th\": \"a}b\\\"\"}".into()),
            ]
        );
        assert_eq!(
            parsed,
            Parsed::Call {
                name: "ls".into(),
                arguments: "{\"path\": \"a}b\\\"\"}".into(),
                complete: true,
            }
        );
    }

    #[test]
    fn a_call_cut_off_inside_its_arguments_is_incomplete() {
        let (_, parsed) = run(
            true,
            &["<tool_call>{\"name\":\"read\",\"arguments\":{\"path\":[1,"],
        );
        assert_eq!(
            parsed,
            Parsed::Call {
                name: "read".into(),
                arguments: "{\"path\":[1,".into(),
                complete: false,
            }
        );
        assert_eq!(
            run(true, &["<tool_ca"]).1,
            Parsed::Malformed("<tool_ca".into())
        );
        assert_eq!(run(true, &[" \n"]).1, Parsed::Empty);
    }
}
