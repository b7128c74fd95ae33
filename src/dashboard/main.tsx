import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Provider } from 'urql';
import { App } from './App';
import { client } from './client';
import { RouterProvider } from './router';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Provider value={client}>
      <RouterProvider>
        <App />
      </RouterProvider>
    </Provider>
  </StrictMode>,
);
