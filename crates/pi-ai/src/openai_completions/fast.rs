//! A typed view of the common `chat.completion.chunk` (text or reasoning deltas, a finish
//! reason), read without building a JSON tree: most of a streamed response is such chunks, and
//! the tree (an ordered map per object, every key allocated and hashed) was the largest cost
//! per delta.
//!
//! The view only accepts what it can render exactly like the general path: any chunk it
//! cannot read (a type it does not expect, a duplicate key, a lone surrogate, an error, usage,
//! a tool call's index that is not a plain small integer) is read by the general path instead,
//! so the outcome is the same either way.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub choices: Option<Vec<Choice<'a>>>,
    /// Present (not null) sends the chunk to the general path.
    usage: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub delta: Option<Delta<'a>>,
    usage: Option<IgnoredAny>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub reasoning_text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub tool_calls: Option<Vec<ToolCall<'a>>>,
}

/// One entry of `delta.tool_calls` (a streamed tool call's start or a piece of its arguments).
#[derive(Deserialize)]
pub(super) struct ToolCall<'a> {
    /// Kept as written: the view takes only a plain integer (see [`ToolCall::stream_index`]).
    #[serde(borrow)]
    index: Option<&'a RawValue>,
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub function: Option<Function<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Function<'a> {
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

impl ToolCall<'_> {
    /// `index` as the general path reads it (`as_i64` of the JavaScript number), for an index
    /// the view took.
    pub fn stream_index(&self) -> Option<i64> {
        self.index.and_then(|raw| raw.get().parse().ok())
    }

    /// Whether `index` is absent or a plain integer of at most 15 digits, which both paths read
    /// alike; a fraction, an exponent, `-0` (a float in JavaScript) or a string go to the
    /// general path. (`raw` is valid JSON, so the digits are not empty and have no leading 0.)
    fn plain_index(&self) -> bool {
        self.index.is_none_or(|raw| {
            let text = raw.get();
            let digits = text.strip_prefix('-').unwrap_or(text);
            digits.len() <= 15 && digits.bytes().all(|b| b.is_ascii_digit()) && text != "-0"
        })
    }
}

impl Delta<'_> {
    /// The first non-empty reasoning field, in the order the general path looks for them.
    pub fn reasoning_field(&self) -> Option<(&'static str, &str)> {
        [
            ("reasoning_content", &self.reasoning_content),
            ("reasoning", &self.reasoning),
            ("reasoning_text", &self.reasoning_text),
        ]
        .into_iter()
        .find_map(|(f, v)| v.as_deref().filter(|s| !s.is_empty()).map(|s| (f, s)))
    }
}

/// The chunk in `data` of an event that is not an `error` event, if the view can read it.
pub(super) fn parse<'a>(event: Option<&str>, data: &'a str) -> Option<Chunk<'a>> {
    if event == Some("error") || data == "[DONE]" {
        return None;
    }
    let chunk: Chunk<'a> = serde_json::from_str(data).ok()?;
    let plain = chunk.usage.is_none()
        && chunk.error.is_none()
        && chunk.choices.iter().flatten().all(|c| {
            c.usage.is_none()
                && c.delta
                    .as_ref()
                    .and_then(|d| d.tool_calls.as_ref())
                    .is_none_or(|calls| calls.iter().all(ToolCall::plain_index))
        });
    plain.then_some(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_deltas_and_leaves_the_rest_to_the_general_path() {
        let c = parse(None, r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"h\u00e9"},"finish_reason":null}]}"#).unwrap();
        assert_eq!(c.id.as_deref(), Some("c1"));
        let choice = &c.choices.as_ref().unwrap()[0];
        assert_eq!(
            choice.delta.as_ref().unwrap().content.as_deref(),
            Some("hé")
        );
        assert!(choice.finish_reason.is_none());
        let r = parse(
            None,
            r#"{"choices":[{"delta":{"reasoning":"","reasoning_text":"t"}}]}"#,
        )
        .unwrap();
        let d = r.choices.as_ref().unwrap()[0].delta.as_ref().unwrap();
        assert_eq!(d.reasoning_field(), Some(("reasoning_text", "t")));
        for general in [
            r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"delta":{},"usage":{"x":1}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1.5}]}}]}"#,
            r#"{"error":{"message":"m"}}"#,
            r#"{"error":false}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"id":5}"#,
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
            r#"{"choices":[{"delta":"text"}]}"#,
            r#"[1]"#,
            "[DONE]",
            "{",
        ] {
            assert!(parse(None, general).is_none(), "{general}");
        }
        assert!(parse(Some("error"), r#"{"choices":[]}"#).is_none());
        // Null is absence, as in the general path.
        assert!(
            parse(
                None,
                r#"{"usage":null,"error":null,"choices":[{"delta":null}]}"#
            )
            .is_some()
        );
    }
}
