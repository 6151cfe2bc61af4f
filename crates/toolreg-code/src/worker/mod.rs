//! The worker: the process that runs one program in QuickJS and talks to
//! its host over stdin and stdout (see `protocol`).
//!
//! The interpreter never runs in the host's process: a program can hang a
//! native loop QuickJS does not interrupt (`JSON.stringify` of a tree of
//! shared references), and a fault in a C interpreter must not take an
//! agent or a server down with it. The host kills a worker that overruns
//! its time; the worker itself caps its address space and CPU time, drops
//! file-system and network access where the kernel allows (Landlock), and
//! is started with an empty environment.
//!
//! The program sees only what the prelude (`prelude.js`) gives it: `tools`,
//! `console`, `ToolError`, and the language's own built-ins without a
//! clock, randomness (a fixed-seed `Math.random`), `eval` or the function
//! constructors. QuickJS's `std` and `os` modules are not compiled in, so
//! there is no file, socket, process or environment to reach.

use std::cell::RefCell;
use std::io::{self, BufRead, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::context::intrinsic;
use rquickjs::{Array, CatchResultExt, Context, Ctx, Exception, Function, Promise, Runtime};
use serde_json::Value;

mod data;
mod exception;
mod harden;
mod link;

use crate::protocol::{FromWorker, ProgramCall, ToWorker};
use crate::{CodeError, Limits};
use data::{Natives, Refused};
use exception::{PROGRAM_FILE, classify, named};
use harden::harden;
use link::{Link, Settled, fit, read_message, write_message};

const PRELUDE: &str = include_str!("prelude.js");

/// How deep a call's arguments or the program's result may nest. The host
/// reads each inside a message a few levels deep, with serde_json's limit
/// of 128 levels: past this, the worker refuses with its own clear error
/// rather than send a message the host cannot read.
const MAX_DEPTH: usize = 100;

/// Run the worker on this process's stdin and stdout: read one program,
/// run it, answer, exit. The binary `toolreg-code-worker` is this function;
/// a host that ships one binary can call it from a hidden subcommand
/// instead (as `toolreg code-worker` does) and point
/// [`Worker`](crate::Worker) at that.
///
/// Returns the process's exit status: success when the host got an answer
/// (even a failed program's), failure when the conversation broke.
pub fn serve() -> std::process::ExitCode {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut output = stdout.lock();
    match serve_on(&mut input, &mut output) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(io::stderr(), "toolreg-code-worker: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn serve_on(input: &mut impl BufRead, output: &mut impl Write) -> io::Result<()> {
    // The start message is bounded by the largest a host sends.
    let start = read_message(input, Limits::default().message_bytes.max(64 << 20))?;
    let ToWorker::Start { program, tools, limits } = start else {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "expected a start message"));
    };
    harden(&limits);
    let answer = run(&program, &tools, limits, &mut Link { input, output, limit: limits.message_bytes });
    write_message(output, &fit(answer, limits.message_bytes))
}

/// The final message within the host's size limit: a result that fits on
/// its own may not fit beside the printed output and the message's own
/// envelope, nor a huge thrown text, and the host would read an oversized
/// message as a broken worker. A result too large becomes a
/// [`CodeError::BadResult`]; an error's text is cut in the middle; the
/// output is dropped only if it still does not fit.
/// What the program's host functions and the interrupt handler share.
struct Run {
    limits: Limits,
    /// Calls made and not yet sent.
    queued: Vec<ProgramCall>,
    /// About how many bytes of message they make.
    queued_bytes: usize,
    /// Calls made in all.
    made: u64,
    printed: String,
    /// How much of `printed` went to the host with calls already.
    shown: usize,
    /// Why the program must stop, once something decided it: checked by
    /// the interrupt handler, so the program cannot catch it.
    stop: Option<CodeError>,
    steps: u64,
    /// Interpreter time used before the current stretch.
    used: Duration,
    /// When the current stretch of interpreter time began (none while
    /// waiting for the host).
    since: Option<Instant>,
}

impl Run {
    fn interpreter_time(&self) -> Duration {
        self.used + self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    fn pause(&mut self) {
        if let Some(since) = self.since.take() {
            self.used += since.elapsed();
        }
    }

    fn resume(&mut self) {
        self.since = Some(Instant::now());
    }

    /// Called by QuickJS every few thousand instructions: `true` ends the
    /// program with an exception it cannot catch.
    fn interrupt(&mut self) -> bool {
        if self.stop.is_some() {
            return true;
        }
        self.steps += 1;
        if self.steps > self.limits.max_steps {
            self.stop = Some(CodeError::StepLimit { limit: self.limits.max_steps });
        } else if self.interpreter_time() > self.limits.time {
            self.stop = Some(CodeError::Timeout { limit_ms: millis(self.limits.time) });
        }
        self.stop.is_some()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Run `program` to its answer.
fn run<R: BufRead, W: Write>(program: &str, tools: &[String], limits: Limits, link: &mut Link<'_, R, W>) -> FromWorker {
    let state = Rc::new(RefCell::new(Run {
        limits,
        queued: Vec::new(),
        queued_bytes: 0,
        made: 0,
        printed: String::new(),
        shown: 0,
        stop: None,
        steps: 0,
        used: Duration::ZERO,
        since: Some(Instant::now()),
    }));
    let result = evaluate(program, tools, &state, link);
    let mut state = state.borrow_mut();
    let output = std::mem::take(&mut state.printed);
    match result {
        Ok(value) => FromWorker::Done { value, output },
        Err(error) => FromWorker::Failed { error: state.stop.take().unwrap_or(error), output },
    }
}

type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

fn evaluate<R: BufRead, W: Write>(
    program: &str,
    tools: &[String],
    state: &Rc<RefCell<Run>>,
    link: &mut Link<'_, R, W>,
) -> Result<Value, CodeError> {
    let sandbox = |e: rquickjs::Error| CodeError::Sandbox { message: format!("the interpreter failed to start: {e}") };
    let limits = state.borrow().limits;
    let runtime = Runtime::new().map_err(sandbox)?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let interrupt = Rc::clone(state);
    runtime.set_interrupt_handler(Some(Box::new(move || interrupt.borrow_mut().interrupt())));
    // Without `Performance` (a real clock) and `WeakRef` (garbage
    // collection made visible): a run must depend on its tools alone.
    let context = Context::custom::<Intrinsics>(&runtime).map_err(sandbox)?;
    context.with(|ctx| drive(&ctx, program, tools, state, link))
}

fn drive<'js, R: BufRead, W: Write>(
    ctx: &Ctx<'js>,
    program: &str,
    tools: &[String],
    state: &Rc<RefCell<Run>>,
    link: &mut Link<'_, R, W>,
) -> Result<Value, CodeError> {
    // QuickJS reads its source as a C string: a NUL would fail inside the
    // binding with a message about the wrapper's text, not the program's.
    if let Some(at) = program.find('\0') {
        let line = program[..at].matches('\n').count() + 1;
        return Err(CodeError::Syntax {
            message: format!("the program holds a NUL character (line {line}); inside a string, write it as \\u0000"),
        });
    }
    let (settle, natives) = prelude(ctx, tools, state)?;
    // The program's value is read from the promise itself: a `.then` here
    // would call whatever the program made of `Promise.prototype.then`.
    let wrapped = format!("(async () => {{\n{program}\n}})()");
    let promise: Promise<'js> = match ctx.eval_with_options(wrapped, named(PROGRAM_FILE)).catch(ctx) {
        Ok(promise) => promise,
        Err(caught) => return Err(classify(&caught, state, true, &natives)),
    };
    loop {
        while state.borrow().stop.is_none() && ctx.execute_pending_job() {}
        if let Some(stop) = state.borrow_mut().stop.take() {
            return Err(stop);
        }
        match promise.result::<rquickjs::Value<'js>>() {
            Some(Ok(value)) => return result(ctx, &natives, &value, state),
            Some(Err(error)) => {
                let caught = Err::<(), _>(error).catch(ctx).err();
                return Err(caught.map_or_else(
                    || CodeError::Exception { message: "the program failed".into() },
                    |c| classify(&c, state, false, &natives),
                ));
            }
            None => {}
        }
        let calls = std::mem::take(&mut state.borrow_mut().queued);
        state.borrow_mut().queued_bytes = 0;
        if calls.is_empty() {
            return Err(CodeError::Stalled);
        }
        let printed = {
            let mut run = state.borrow_mut();
            let printed = run.printed[run.shown..].to_owned();
            run.shown = run.printed.len();
            printed
        };
        state.borrow_mut().pause();
        let replies = link
            .exchange(calls, printed)
            .map_err(|e| CodeError::Sandbox { message: format!("lost the host while waiting for results: {e}") })?;
        state.borrow_mut().resume();
        for Settled { id, ok, payload } in replies {
            // Only an interrupt can make `settle` fail; the loop's next
            // turn reports it.
            let _ = settle.call::<_, ()>((id, ok, payload)).catch(ctx);
        }
    }
}

/// The program's return value as the host receives it: its JSON, read as
/// arguments are (see `data`).
fn result<'js>(
    ctx: &Ctx<'js>,
    natives: &Array<'js>,
    value: &rquickjs::Value<'js>,
    state: &Rc<RefCell<Run>>,
) -> Result<Value, CodeError> {
    let limits = state.borrow().limits;
    let bad = |message: String| CodeError::BadResult { message };
    let natives = Natives::from_list(natives).map_err(|e| sandbox_error(ctx, e, state))?;
    let text = match data::json(&natives, value, limits.message_bytes, MAX_DEPTH) {
        Ok(text) => text,
        Err(Refused::NotData { what, at }) if at.is_empty() => return Err(bad(what)),
        Err(Refused::NotData { what, at }) => return Err(bad(format!("at `result{at}`: {what}"))),
        Err(Refused::LoneSurrogate) => {
            return Err(bad("it holds a lone surrogate (half of a UTF-16 pair), which is not valid Unicode".into()));
        }
        Err(Refused::TooDeep) => return Err(bad(format!("it is nested more than {MAX_DEPTH} levels deep"))),
        Err(Refused::TooLarge) => {
            return Err(bad(format!("it is more than the limit of {} bytes of JSON", limits.message_bytes)));
        }
        Err(Refused::Interpreter(error)) => return Err(sandbox_error(ctx, error, state)),
    };
    finish(&text, &limits)
}

/// The error for the interpreter failing while the worker read a value:
/// the limit that stopped it, where one did.
fn sandbox_error(ctx: &Ctx<'_>, error: rquickjs::Error, state: &Rc<RefCell<Run>>) -> CodeError {
    if let Some(stop) = state.borrow_mut().stop.take() {
        return stop;
    }
    let limits = state.borrow().limits;
    match Err::<(), _>(error).catch(ctx) {
        Err(rquickjs::CaughtError::Value(v)) if v.is_null() => {
            CodeError::MemoryLimit { limit_bytes: limits.memory_bytes }
        }
        Err(rquickjs::CaughtError::Error(rquickjs::Error::Allocation)) => {
            CodeError::MemoryLimit { limit_bytes: limits.memory_bytes }
        }
        Err(caught) => CodeError::Sandbox { message: format!("reading the program's value failed: {caught}") },
        Ok(()) => CodeError::Sandbox { message: "reading the program's value failed".into() },
    }
}

/// The text a call's arguments are refused with.
fn refusal<'js>(ctx: &Ctx<'js>, tool: &str, refused: Refused, limit: usize) -> rquickjs::Error {
    match refused {
        Refused::NotData { what, at } if at.is_empty() => {
            Exception::throw_type(ctx, &format!("the arguments of {tool} are not plain data: {what}"))
        }
        Refused::NotData { what, at } => {
            Exception::throw_type(ctx, &format!("the arguments of {tool} are not plain data at `args{at}`: {what}"))
        }
        Refused::LoneSurrogate => Exception::throw_type(
            ctx,
            &format!(
                "the arguments of {tool} hold a lone surrogate (half of a UTF-16 pair), which is not valid Unicode"
            ),
        ),
        Refused::TooDeep => Exception::throw_range(
            ctx,
            &format!("the arguments of {tool} are nested more than {MAX_DEPTH} levels deep"),
        ),
        Refused::TooLarge => {
            Exception::throw_range(ctx, &format!("the arguments of {tool} are more than {limit} bytes of JSON"))
        }
        Refused::Interpreter(error) => error,
    }
}

/// Evaluate the prelude with the host functions; it returns `settle`, and
/// the built-ins it took for reading the program's values.
fn prelude<'js>(
    ctx: &Ctx<'js>,
    tools: &[String],
    state: &Rc<RefCell<Run>>,
) -> Result<(Function<'js>, Array<'js>), CodeError> {
    let sandbox = |e: String| CodeError::Sandbox { message: format!("the prelude failed: {e}") };
    let calls = Rc::clone(state);
    let call = Function::new(ctx.clone(), move |ctx: Ctx<'js>, tool: String, args: String| {
        let mut run = calls.borrow_mut();
        if run.stop.is_some() {
            return Err(Exception::throw_internal(&ctx, "the program is being stopped"));
        }
        if run.made >= run.limits.max_calls as u64 {
            run.stop = Some(CodeError::CallLimit { limit: run.limits.max_calls });
            return Err(Exception::throw_internal(&ctx, "too many tool calls"));
        }
        // The host reads every call waiting together in one message: refuse
        // the call that would take that message past its limit, here, with
        // an error the program can read, rather than send what the host
        // must reject.
        // (What it printed since the last message goes in that message too.)
        let bytes = args.len() + tool.len() + 64;
        let unsent = run.printed.len() - run.shown;
        if run.queued_bytes + bytes + unsent > run.limits.message_bytes {
            let message = format!(
                "the arguments of {tool} would take the calls waiting together past {} bytes: await some calls before \
                 starting more, or pass less",
                run.limits.message_bytes
            );
            return Err(Exception::throw_range(&ctx, &message));
        }
        let args: Value = serde_json::from_str(&args)
            .map_err(|e| Exception::throw_type(&ctx, &format!("the arguments of {tool} are not JSON: {e}")))?;
        run.made += 1;
        run.queued_bytes += bytes;
        let id = run.made;
        run.queued.push(ProgramCall { id, tool, args });
        Ok(id)
    })
    .map_err(|e| sandbox(e.to_string()))?;
    let message_bytes = state.borrow().limits.message_bytes;
    // A call's arguments as JSON, read without running the program's code;
    // nested no deeper than the host reads.
    let encode = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, natives: Array<'js>, tool: String, args: rquickjs::Value<'js>| {
            let natives = Natives::from_list(&natives)?;
            data::json(&natives, &args, message_bytes, MAX_DEPTH)
                .map_err(|refused| refusal(&ctx, &tool, refused, message_bytes))
        },
    )
    .map_err(|e| sandbox(e.to_string()))?;
    let prints = Rc::clone(state);
    let print = Function::new(ctx.clone(), move |ctx: Ctx<'js>, natives: Array<'js>, items: Array<'js>| {
        let stopped = |ctx: &Ctx<'js>| Err(Exception::throw_internal(ctx, "the program is being stopped"));
        let (left, limit) = {
            let run = prints.borrow();
            if run.stop.is_some() {
                return stopped(&ctx);
            }
            (run.limits.output_bytes.saturating_sub(run.printed.len()), run.limits.output_bytes)
        };
        // No borrow of the run is held while values are read: that may
        // run the interpreter, and its interrupt handler borrows the run.
        let natives = Natives::from_list(&natives)?;
        let mut line = String::new();
        let mut over = false;
        for index in 0..items.len() {
            if index > 0 {
                line.push(' ');
            }
            let item: rquickjs::Value<'js> = items.get(index)?;
            let (text, cut) = data::display(&natives, &item, left.saturating_sub(line.len()))?;
            line.push_str(&text);
            if cut {
                over = true;
                break;
            }
        }
        line.push('\n');
        let mut run = prints.borrow_mut();
        if run.stop.is_some() {
            return stopped(&ctx);
        }
        if over || run.printed.len() + line.len() > limit {
            run.stop = Some(CodeError::OutputLimit { limit_bytes: limit });
            return Err(Exception::throw_internal(&ctx, "too much output"));
        }
        run.printed.push_str(&line);
        Ok(())
    })
    .map_err(|e| sandbox(e.to_string()))?;
    let names = serde_json::to_string(tools).map_err(|e| sandbox(e.to_string()))?;
    let setup: Function<'js> =
        ctx.eval_with_options(PRELUDE, named("prelude.js")).catch(ctx).map_err(|e| sandbox(e.to_string()))?;
    let made: Array<'js> = setup.call((call, encode, print, names)).catch(ctx).map_err(|e| sandbox(e.to_string()))?;
    let settle = made.get(0).catch(ctx).map_err(|e| sandbox(e.to_string()))?;
    let natives = made.get(1).catch(ctx).map_err(|e| sandbox(e.to_string()))?;
    Ok((settle, natives))
}

fn finish(text: &str, limits: &Limits) -> Result<Value, CodeError> {
    if text.len() > limits.message_bytes {
        return Err(CodeError::BadResult {
            message: format!("it is {} bytes of JSON, more than the limit of {}", text.len(), limits.message_bytes),
        });
    }
    serde_json::from_str(text).map_err(|e| CodeError::BadResult { message: e.to_string() })
}
