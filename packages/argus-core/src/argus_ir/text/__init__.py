"""Text: grounding of document spans and entity mentions (spaCy NER, LLM, gazetteer)."""
