"""Source adapters: one module per public source, each reading its input into typed parts
(kernelindex.ingest.sources.parts) and nothing else; what is done with the parts is the pipeline's."""
