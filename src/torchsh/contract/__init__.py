"""A model's contract: what it expects and what its output means, one object that travels with the model.

card.py     the stored card (JSON): inputs, categories, preprocessing, task, target, output, classes
learn.py    `torch fit` writes it from the data it trains on and one probed output
tasks.py    one row per task: how an output is decided (argmax, logit > 0, …) and its probabilities
encode.py   inputs checked against the card and preprocessed as in training (every verb that feeds a model)
decode.py   outputs read by the card's task and classes (predict, serve, metrics)
docs/models.md has the table of each verb against each fact.
"""
