//! The five file tools: `#[tool]` methods of [`FileTools`], each running
//! its blocking I/O on tokio's blocking pool. Reads are `Safe`; writes are
//! `Dangerous`, name `path` as their exclusive key, and show an approver the
//! diff they would apply.

use serde_json::Value;
use toolreg::exec::{Content, ToolOutput};
use toolreg::{SafetyLevel, ToolRegistration, tools};

use super::{
    EditArgs, EditResult, FileError, FileTools, ListArgs, ListResult, ReadArgs, SearchArgs, SearchResult, WriteArgs,
    WriteResult,
};

impl FileTools {
    /// The diff a `write_file` or `edit_file` call would apply, computed
    /// without writing; `Ok(None)` for any other tool. The registrations
    /// attach it as their approval preview, so an approver shows it before a
    /// write is allowed.
    ///
    /// ```
    /// use toolreg_builtins::files::FileTools;
    /// use serde_json::json;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = tempfile::tempdir()?;
    /// std::fs::write(root.path().join("a.txt"), "hello\n")?;
    /// let files = FileTools::open(root.path())?;
    /// let args = json!({"path": "a.txt", "edits": [{"old_string": "hello", "new_string": "bye"}]});
    /// let diff = files.preview("edit_file", &args)?.expect("a file tool");
    /// assert!(diff.contains("-hello\n+bye\n"));
    /// assert_eq!(std::fs::read_to_string(root.path().join("a.txt"))?, "hello\n");
    /// # Ok(())
    /// # }
    /// ```
    pub fn preview(&self, tool: &str, arguments: &Value) -> Result<Option<String>, FileError> {
        let parse_error = |e: serde_json::Error| FileError::Io {
            operation: "reading the arguments of",
            path: tool.to_owned(),
            message: e.to_string(),
        };
        match tool {
            Self::EDIT_FILE_TOOL_NAME => {
                let args: EditArgs = serde_json::from_value(arguments.clone()).map_err(parse_error)?;
                Ok(Some(self.preview_edit(&args)?.diff))
            }
            Self::WRITE_FILE_TOOL_NAME => {
                let args: WriteArgs = serde_json::from_value(arguments.clone()).map_err(parse_error)?;
                Ok(Some(self.preview_write(&args)?))
            }
            _ => Ok(None),
        }
    }

    /// The five tools, ready for [`toolreg::register_tools!`].
    /// Each runs its blocking I/O on tokio's blocking pool.
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        self.tool_registrations()
            .into_iter()
            .map(|tool| {
                if tool.declaration().safety == SafetyLevel::Safe {
                    return tool;
                }
                // An approver sees the diff a write would apply before it is allowed.
                let files = self.clone();
                let name = tool.name().to_owned();
                tool.with_approval_preview(move |args| match files.preview(&name, args) {
                    Ok(diff) => diff,
                    Err(error) => Some(format!("(no preview: {error})")),
                })
            })
            .collect()
    }

    /// Run `run` on tokio's blocking pool, as the tool `operation`.
    async fn blocking<A, R>(
        &self,
        operation: &'static str,
        args: A,
        run: fn(&FileTools, &A) -> Result<R, FileError>,
    ) -> Result<R, FileError>
    where
        A: Send + 'static,
        R: Send + 'static,
    {
        let tools = self.clone();
        match tokio::task::spawn_blocking(move || run(&tools, &args)).await {
            Ok(result) => result,
            // Carry the panic on into the call's future, where the engine
            // turns it into `ToolError::Panicked` as it does for every
            // tool's panic.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(FileError::Io {
                operation,
                path: String::new(),
                message: "the runtime shut down before the call finished".to_owned(),
            }),
        }
    }
}

#[tools]
impl FileTools {
    /// Read a file under the workspace root. Text comes back with lines
    /// numbered from 1; use offset and limit to page through long files.
    /// Images (PNG, JPEG, GIF, WebP) and PDFs come back whole, as an image
    /// or a document you can see. Other binary files are refused with their
    /// size and type.
    #[tool(safety = "safe", category = "fs", scope = "core")]
    async fn read_file(&self, #[args] args: ReadArgs) -> Result<ToolOutput, FileError> {
        self.blocking(Self::READ_FILE_TOOL_NAME, args, Self::read_content).await.map(ToolOutput::from)
    }

    /// Create or replace a file under the workspace root with the given
    /// content, atomically. Set create_parents to create missing parent
    /// directories.
    #[tool(safety = "dangerous", category = "fs", scope = "core", exclusive = "path")]
    async fn write_file(&self, #[args] args: WriteArgs) -> Result<WriteResult, FileError> {
        self.blocking(Self::WRITE_FILE_TOOL_NAME, args, Self::write).await
    }

    /// Replace exact text in a file. Each old_string must match exactly once
    /// unless replace_all is set; the result shows the unified diff.
    #[tool(safety = "dangerous", category = "fs", scope = "core", exclusive = "path")]
    async fn edit_file(&self, #[args] args: EditArgs) -> Result<EditResult, FileError> {
        self.blocking(Self::EDIT_FILE_TOOL_NAME, args, Self::edit).await
    }

    /// List files under a directory of the workspace (the root by default),
    /// recursively, skipping what .gitignore excludes. pattern is a glob such
    /// as `*.rs` or `src/**/*.toml`.
    #[tool(safety = "safe", category = "fs", scope = "core")]
    async fn list_files(&self, #[args] args: ListArgs) -> Result<ListResult, FileError> {
        self.blocking(Self::LIST_FILES_TOOL_NAME, args, Self::list).await
    }

    /// Search file contents with a regular expression; returns
    /// `file:line:text` matches. Respects .gitignore; glob restricts which
    /// files are searched.
    #[tool(safety = "safe", category = "fs", scope = "core")]
    async fn search_files(&self, #[args] args: SearchArgs) -> Result<ToolOutput, FileError> {
        self.blocking(Self::SEARCH_FILES_TOOL_NAME, args, Self::search).await.map(SearchResult::into_output)
    }
}

impl SearchResult {
    /// The text a model reads: a line saying how many matches were found in
    /// how many files (and what was cut or skipped), then each match as
    /// `file:line:text`, one per line.
    pub fn text(&self) -> String {
        let found = match self.matches.len() {
            0 => "no matches".to_owned(),
            1 => "1 match".to_owned(),
            n => format!("{n} matches"),
        };
        let mut text = format!("{found} in {} files searched", self.files_searched);
        if self.truncated {
            text.push_str(" (truncated at the limit; narrow the search with path or glob)");
        }
        if self.files_skipped > 0 {
            text.push_str(&format!("; {} files skipped as binary or too large", self.files_skipped));
        }
        if self.ignore_patterns_skipped > 0 {
            text.push_str(&format!("; {} ignore patterns not applied", self.ignore_patterns_skipped));
        }
        for line in &self.matches {
            text.push('\n');
            text.push_str(line);
        }
        text
    }

    /// As a tool result: [`text`](Self::text) as the one text block a model
    /// reads, the whole result as the structured value, for programs.
    pub fn into_output(self) -> ToolOutput {
        let text = self.text();
        // `SearchResult` holds only strings, integers and booleans.
        ToolOutput::from(Content::text(text)).with_value(serde_json::to_value(self).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::ReadResult;

    /// A panic on the blocking pool reaches the engine as a panic, like any
    /// other tool's, not as an I/O error with no path.
    #[tokio::test]
    async fn a_panic_in_a_file_tool_is_reported_as_a_panic() {
        let root = tempfile::tempdir().unwrap();
        let tools = FileTools::open(root.path()).unwrap();
        let boom = toolreg::ToolRegistration::new(
            toolreg::ToolDeclaration::for_args::<ReadArgs>("boom", "Panics.").with_safety(SafetyLevel::Safe),
            move |args: ReadArgs| {
                let tools = tools.clone();
                async move {
                    let panics: fn(&FileTools, &ReadArgs) -> Result<ReadResult, FileError> =
                        |_, _| panic!("disk on fire");
                    tools.blocking("boom", args, panics).await
                }
            },
        );
        let mut registry = toolreg::FunctionRegistry::new();
        registry.register(boom).unwrap();
        let engine = toolreg::ToolEngine::builder(&registry).build();
        let call = toolreg::ToolCall::new("c1", "boom", serde_json::json!({"path": "a.txt"}));
        let result = toolreg::ToolExecutor::execute_call(&engine, call, toolreg::CallOptions::default()).await;
        match result.outcome {
            Err(toolreg::ToolError::Panicked { message }) => assert_eq!(message, "disk on fire"),
            other => panic!("expected a panic, got {other:?}"),
        }
    }
}
