"""Training and evaluation: data pipeline, translator training, encoder distillation, BLEU evaluation."""
