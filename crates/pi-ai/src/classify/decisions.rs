//! OpenAI's Decisions API: `POST <base>/decisions` with `{model, input, questions}`. The state
//! goes as JSON text (with images: one user message of `input_text` and `input_image` parts);
//! `choice` questions list their choices, `score` questions their levels, and `bool` questions
//! become `predicate`s whose meanings are appended to the instructions. Only API keys work.

use super::{CallError, CallOptions, join_url, parse_usage, post_json, required_number, str_of};
use serde_json::{Map, Value, json};

const LABEL: &str = "OpenAI Decisions";
const PREFIX: &str = "OpenAI Decisions error";
/// The endpoint accepts at most this many image parts per request.
const MAX_IMAGES: usize = 128;

fn predicate_instructions(question: &Value) -> String {
    let instructions = question["instructions"].as_str().unwrap_or("");
    let meanings: Vec<String> = [("true", "True"), ("false", "False")]
        .iter()
        .filter_map(|(k, word)| {
            let m = question["criteria"][*k]
                .as_str()
                .filter(|m| !m.is_empty())?;
            Some(format!("{word} means: {m}"))
        })
        .collect();
    if meanings.is_empty() {
        instructions.to_string()
    } else {
        format!("{instructions}\n\n{}", meanings.join("\n"))
    }
}

fn wire_question(name: &str, q: &Value) -> Value {
    match q["type"].as_str() {
        Some("choice") => {
            let choices: Vec<Value> = q["criteria"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(value, d)| match d.as_str().filter(|d| !d.is_empty()) {
                    Some(d) => json!({"value": value, "description": d}),
                    None => json!({"value": value}),
                })
                .collect();
            json!({"type": "choice", "name": name, "instructions": q["instructions"], "choices": choices})
        }
        Some("score") => {
            let levels: Vec<Value> = q["criteria"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| json!({"label": l}))
                .collect();
            json!({"type": "score", "name": name, "instructions": q["instructions"], "levels": levels})
        }
        _ => json!({"type": "predicate", "name": name, "instructions": predicate_instructions(q)}),
    }
}

fn wire_input(context: &Value) -> Result<Value, CallError> {
    let state = pi_js::json::to_js_string(&context["state"]).unwrap_or_default();
    let images = context["images"].as_array().cloned().unwrap_or_default();
    if images.is_empty() {
        return Ok(json!(state));
    }
    if images.len() > MAX_IMAGES {
        return Err(CallError::Message(format!(
            "{LABEL} accepts at most {MAX_IMAGES} images, got {}",
            images.len()
        )));
    }
    let mut content = vec![json!({"type": "input_text", "text": state})];
    content.extend(images.iter().map(|i| {
        json!({"type": "input_image", "image_url": format!("data:{};base64,{}", i["mimeType"].as_str().unwrap_or(""), i["data"].as_str().unwrap_or(""))})
    }));
    Ok(json!([{"role": "user", "content": content}]))
}

/// The request body of a classification.
pub(super) fn request_body(
    model: &Map<String, Value>,
    context: &Value,
) -> Result<Value, CallError> {
    let questions: Vec<Value> = context["questions"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(id, q)| wire_question(id, q))
        .collect();
    Ok(json!({"model": str_of(model, "id"), "input": wire_input(context)?, "questions": questions}))
}

fn choice_probabilities(value: &Value, id: &str) -> Result<Value, CallError> {
    let invalid = || CallError::Message(format!("{LABEL} returned invalid probabilities for {id}"));
    let entries = value.as_array().ok_or_else(invalid)?;
    let mut out = Map::new();
    for e in entries {
        let v = e["value"].as_str().ok_or_else(invalid)?;
        out.insert(
            v.to_string(),
            required_number(
                LABEL,
                e.get("probability"),
                &format!("probability for {id}.{v}"),
            )?,
        );
    }
    Ok(Value::Object(out))
}

fn parse_answer(id: &str, question: &Value, answer: &Value) -> Result<Value, CallError> {
    let err = |m: String| Err(CallError::Message(m));
    if answer["type"] == "refusal" {
        return err(format!("{LABEL} refused to answer {id}"));
    }
    let confidence = || {
        required_number(
            LABEL,
            answer.get("confidence"),
            &format!("confidence for {id}"),
        )
    };
    match question["type"].as_str() {
        Some("choice") => {
            let Some(choice) = answer["choice"]
                .as_str()
                .filter(|_| answer["type"] == "choice")
            else {
                return err(format!("{LABEL} did not return a choice answer for {id}"));
            };
            Ok(json!({
                "type": "choice",
                "choice": choice,
                "probabilities": choice_probabilities(&answer["probabilities"], id)?,
                "confidence": confidence()?,
            }))
        }
        Some("score") => {
            if answer["type"] != "score" {
                return err(format!("{LABEL} did not return a score answer for {id}"));
            }
            Ok(json!({
                "type": "score",
                "score": required_number(LABEL, answer.get("score"), &format!("score for {id}"))?,
                "confidence": confidence()?,
            }))
        }
        _ => {
            if answer["type"] != "predicate" {
                return err(format!(
                    "{LABEL} did not return a predicate answer for {id}"
                ));
            }
            Ok(json!({
                "type": "bool",
                "probability": required_number(LABEL, answer.get("probability"), &format!("probability for {id}"))?,
            }))
        }
    }
}

fn parse_answers(value: Option<&Value>, context: &Value) -> Result<Value, CallError> {
    let Some(list) = value.and_then(Value::as_array) else {
        return Err(CallError::Message(format!(
            "{LABEL} returned an unexpected response"
        )));
    };
    let mut by_name: Vec<(&str, &Value)> = Vec::new();
    for a in list {
        if let Some(name) = a["name"].as_str().filter(|_| a.is_object()) {
            // A later answer of the same name wins, as a Map keeps the last set.
            by_name.retain(|(n, _)| *n != name);
            by_name.push((name, a));
        }
    }
    let mut out = Map::new();
    for (id, q) in context["questions"].as_object().into_iter().flatten() {
        let Some((_, answer)) = by_name.iter().find(|(n, _)| n == id) else {
            return Err(CallError::Message(format!(
                "{LABEL} did not return an answer for {id}"
            )));
        };
        out.insert(id.clone(), parse_answer(id, q, answer)?);
    }
    Ok(Value::Object(out))
}

pub(super) async fn classify(
    model: &Map<String, Value>,
    context: &Value,
    options: &CallOptions,
    out: &mut Map<String, Value>,
) -> Result<(), (&'static str, CallError)> {
    let fail = |e: CallError| match e {
        // Cloudflare in front of the API answers 504 when a request runs longer than about five
        // seconds; retrying the same input runs into it again.
        CallError::Status { status: 504, .. } => (
            PREFIX,
            CallError::Message(format!(
                "{LABEL} error (504): the request timed out at the gateway. Very large inputs (above roughly 600K tokens) currently exceed its time limit."
            )),
        ),
        e => (PREFIX, e),
    };
    let api = str_of(model, "api");
    if api != "openai-decisions" {
        return Err(fail(CallError::Message(format!(
            "Unsupported classifier API: {api}"
        ))));
    }
    let body = request_body(model, context).map_err(fail)?;
    let url = join_url(str_of(model, "baseUrl"), "decisions");
    let response = post_json(LABEL, &url, model, &body, options, &[504])
        .await
        .map_err(fail)?;
    if !response.is_object() {
        return Err(fail(CallError::Message(format!(
            "{LABEL} returned an unexpected response"
        ))));
    }
    // Before the answers: a request with malformed or refused answers was still billed.
    if let Some(usage) = parse_usage(response.get("usage"), model) {
        out.insert("usage".into(), usage);
    }
    let answers = parse_answers(response.get("answers"), context).map_err(fail)?;
    out.insert("answers".into(), answers);
    Ok(())
}
