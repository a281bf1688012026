MODELS = []
