"""A real model offline: llama.cpp's server started on a loopback port (`local_model`), its launcher, and a server's own tokenizer."""
