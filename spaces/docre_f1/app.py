"""The docre_f1 Space's page, as for evaluate's own metrics: the metric card and a form to try it."""

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("envre/docre_f1")
launch_gradio_widget(module)
