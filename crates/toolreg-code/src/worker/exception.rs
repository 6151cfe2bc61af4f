//! What the program's uncaught exception becomes: a limit's own
//! [`CodeError`] where the exception is the interpreter enforcing one, and
//! otherwise the message with a stack trace of the program's own frames, at
//! the lines of the code the model wrote.

use std::cell::RefCell;
use std::rc::Rc;

use rquickjs::context::EvalOptions;
use rquickjs::{Array, CaughtError, Object};

use super::Run;
use super::data::{self, Natives};
use crate::CodeError;

/// How many characters of a thrown value's text are read: a program can
/// throw a string of megabytes, and only this much of it is ever copied or
/// formatted (the whole would keep the worker busy long after the program
/// ended).
const MESSAGE_CHARS: usize = 4096;

/// How many characters of a stack trace are read.
const STACK_CHARS: usize = 16 << 10;

/// The error for an exception that ended the program (at compile time when
/// `compiling`): a limit's own error where the exception is the interpreter
/// enforcing one.
pub(super) fn classify<'js>(
    caught: &CaughtError<'js>,
    state: &Rc<RefCell<Run>>,
    compiling: bool,
    natives: &Array<'js>,
) -> CodeError {
    if let Some(stop) = state.borrow_mut().stop.take() {
        return stop;
    }
    let limits = state.borrow().limits;
    // QuickJS throws `null` when memory is so exhausted that it cannot
    // build an error object (`JS_ThrowError2`). A program that throws
    // `null` itself and never catches it reads the same: told apart from
    // nothing, the memory limit is the likelier cause.
    if matches!(caught, CaughtError::Value(v) if v.is_null()) {
        return CodeError::MemoryLimit { limit_bytes: limits.memory_bytes };
    }
    let (name, message, stack) = match caught {
        CaughtError::Exception(e) => match Natives::from_list(natives) {
            Ok(natives) => {
                let object: &Object<'js> = e.as_object();
                (
                    read(&natives, object, "name", 200),
                    read(&natives, object, "message", MESSAGE_CHARS),
                    text(&natives, natives.stack(object), STACK_CHARS),
                )
            }
            Err(_) => (String::new(), "an error (its text could not be read)".to_owned(), String::new()),
        },
        CaughtError::Value(v) => (String::new(), describe(natives, v), String::new()),
        CaughtError::Error(e) => (String::new(), e.to_string(), String::new()),
    };
    if message.contains("out of memory") || matches!(caught, CaughtError::Error(rquickjs::Error::Allocation)) {
        return CodeError::MemoryLimit { limit_bytes: limits.memory_bytes };
    }
    // A `RangeError` with this text is QuickJS's stack overflow in
    // bytecode; "stack overflow" in some native paths.
    if message.contains("stack overflow") || (name == "RangeError" && message == "Maximum call stack size exceeded") {
        return CodeError::StackOverflow { limit_bytes: limits.stack_bytes };
    }
    if compiling && name == "SyntaxError" {
        return CodeError::Syntax { message: format!("{message}{}", location(&stack)) };
    }
    let mut text = if name.is_empty() { message } else { format!("{name}: {message}") };
    let stack = program_stack(&stack);
    if !stack.is_empty() {
        text.push('\n');
        text.push_str(&stack);
    }
    CodeError::Exception { message: text }
}

/// The name the program is evaluated under, as stack traces show it.
pub(super) const PROGRAM_FILE: &str = "program.js";

pub(super) fn named(file: &str) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.filename = Some(file.to_owned());
    options
}

/// A stack trace as the model can use it: the program's own frames only
/// (not the prelude's), each at its line in the program the model wrote.
fn program_stack(stack: &str) -> String {
    let marker = format!("{PROGRAM_FILE}:");
    stack
        .lines()
        .filter_map(|line| {
            let at = line.find(&marker)?;
            let mut numbers = line[at + marker.len()..].trim_end_matches(')').split(':');
            let row: u64 = numbers.next()?.parse().ok()?;
            let column = numbers.next()?;
            let function = line[..at].trim().trim_start_matches("at ").trim_end_matches('(').trim();
            let place = format!("line {}, column {column}", row.saturating_sub(1).max(1));
            Some(match function {
                "" | "<anonymous>" | "<eval>" => format!("    at {place}"),
                function => format!("    at {function} ({place})"),
            })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A syntax error's position, from its stack line (`at <eval>:3:10`), less
/// the line the wrapper adds before the program.
fn location(stack: &str) -> String {
    // `    at <file>:<line>:<column>` (the file is the evaluator's name).
    let Some(at) = stack.lines().find_map(|l| l.trim().strip_prefix("at ")) else { return String::new() };
    let mut parts = at.trim_end_matches(')').rsplit(':');
    let column = parts.next();
    let line = parts.next();
    let mut parts = [line, column].into_iter().flatten();
    match (parts.next().and_then(|l| l.parse::<u64>().ok()), parts.next()) {
        (Some(line), Some(column)) => format!(" (line {}, column {column})", line.saturating_sub(1).max(1)),
        _ => String::new(),
    }
}

/// A data property of a thrown error as text, at most `chars` characters
/// of it (a getter is not run: it reads as nothing), with how much was
/// left out.
fn read<'js>(natives: &Natives<'js>, error: &Object<'js>, key: &str, chars: usize) -> String {
    text(natives, natives.data_property(error, key), chars)
}

/// A value read from an error as text, cut to `chars` characters (only
/// that much of a longer string is copied).
fn text<'js>(natives: &Natives<'js>, value: rquickjs::Result<Option<rquickjs::Value<'js>>>, chars: usize) -> String {
    let Ok(Some(value)) = value else { return String::new() };
    let Some(text) = value.as_string() else { return String::new() };
    match natives.prefix(text, chars) {
        Ok((text, total)) if total > chars => format!("{text}\n[... {} characters removed ...]", total - chars),
        Ok((text, _)) => text,
        Err(_) => String::new(),
    }
}

/// A thrown value that is not an error, as a reader sees it, cut short.
fn describe<'js>(natives: &Array<'js>, value: &rquickjs::Value<'js>) -> String {
    let shown = Natives::from_list(natives).and_then(|natives| {
        // A thrown string shows quoted, as before: it is a value, not a message.
        match value.as_string() {
            Some(text) => {
                let (text, total) = natives.prefix(text, MESSAGE_CHARS)?;
                let quoted = serde_json::to_string(&text).unwrap_or_default();
                Ok(if total > MESSAGE_CHARS {
                    format!("{quoted}\n[... {} characters removed ...]", total - MESSAGE_CHARS)
                } else {
                    quoted
                })
            }
            None => data::display(&natives, value, MESSAGE_CHARS)
                .map(|(text, cut)| if cut { format!("{text}\n[... the rest was cut ...]") } else { text }),
        }
    });
    shown.unwrap_or_else(|_| format!("a thrown {}", value.type_name()))
}
