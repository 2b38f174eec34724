//! The progress line on stderr. Apart from the driver, which only says what it is doing.

use std::time::Duration;

/// Progress on stderr: a spinner line with the stratum, iteration and delta sizes, drawn
/// only when stderr is a terminal.
pub(super) struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    pub(super) fn new(enabled: bool) -> Progress {
        use std::io::IsTerminal;
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {prefix} {wide_msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress { bar }
    }

    pub(super) fn set(&self, prefix: &str, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(prefix.to_string());
            bar.set_message(message.to_string());
        }
    }

    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
