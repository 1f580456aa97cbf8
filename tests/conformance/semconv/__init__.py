"""GenAI semantic conventions, source: github.com/open-telemetry/semantic-conventions-genai."""
