"""Recording a model's calls to a file and replaying them offline: `record`, `replay`, and the file format."""
